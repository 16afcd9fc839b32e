"""Kafka via ``confluent-kafka``: offsets in our checkpoints, transactional exactly-once output.

**Source.** :class:`KafkaSource` reads topic partitions by *manual
assignment* (``assign``, never ``subscribe``; no consumer-group offsets are
read or committed). Partition names are ``{topic}-{partition}``; a
partition's position is the offset of the next record to read (last returned
offset + 1; transaction markers make gaps, which is fine). Unbounded by
default; ``bounded=True`` stops at the end of the partition as it was when the
reader first got there: the high watermark of that first end-of-partition
fetch, once every transaction below it has settled (see
:class:`~barrier_runtime.connectors._kafka_client.EndOfPartition`: a
``read_committed`` reader sees the end early, at the first open
transaction).

**Sink.** :class:`KafkaSink` stages messages like
:class:`~barrier_runtime.connectors.nats.NatsSink` (inline or under a
``staging_url``) and commits each checkpoint's transaction, step by step:

1. take the writer's producer (``transactional.id = {prefix}-{step}-{subtask}``;
   the prefix is ``cjob-{topic}`` unless ``transactional_id_prefix`` says otherwise):
   the one its previous commit in this process used, else a new one whose
   ``init_transactions`` fences a crashed predecessor and aborts its open
   transaction. This comes first: a predecessor killed between writing its
   commit-log record and committing holds the log's last stable offset back
   until the broker's transaction timeout, and step 2 could not end before it.
   A producer whose commit failed is dropped, never reused (a new producer per
   commit cost ``init_transactions`` every checkpoint: 60-80 ms, about 510 ms
   while the broker was still finishing the previous transaction);
2. read the *commit log* topic (``{topic}.cjob-commits``, compacted, one
   partition; created on first use) up to its end with ``read_committed``
   (its high watermark, every transaction below it settled: a commit that
   returned may not be visible for a moment yet):
   if it says this writer (``{step}/{subtask}``) has committed this
   checkpoint or a later one, the transaction is already published: done.
   The log is read once per producer: while the producer taken in step 1
   is kept, only it can add the writer's records (a newer one would fence
   it, and its commit would fail), so later commits use what it read and
   wrote. A new producer (the first commit in a process, after a failed
   commit, and always for a restored checkpoint's transactions) reads again;
3. in one Kafka transaction, produce every message (header ``cjob-msg-id``
   as in the NATS sink, key from ``key_field``) and the commit-log record
   ``{step}/{subtask} → checkpoint``;
4. commit the Kafka transaction.

A writer takes steps 1-2 when its subtask starts (:meth:`KafkaSink.prepare`), so that
its first commit does not hold the subtask's output back for ``init_transactions``, and
a broker that cannot be reached is reported before any record is read.

Consumers reading with ``isolation.level=read_committed`` see every record
exactly once. This relies on two facts of the runtime: a writer's
transactions are committed in checkpoint order, and a completed checkpoint's
transactions are committed before any later one's.

``confluent_kafka`` is imported only when a client is made.
"""

from barrier_runtime.connectors._kafka_client import create_topic, parse_partition
from barrier_runtime.connectors.kafka_sink import COMMIT_TOPIC_SUFFIX, KafkaSink
from barrier_runtime.connectors.kafka_source import KafkaPartition, KafkaSource, Payload

__all__ = [
    "COMMIT_TOPIC_SUFFIX",
    "KafkaPartition",
    "KafkaSink",
    "KafkaSource",
    "Payload",
    "create_topic",
    "parse_partition",
]
