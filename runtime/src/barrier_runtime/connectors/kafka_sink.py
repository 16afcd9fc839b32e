"""The Kafka sink: one Kafka transaction per checkpoint, deduplicated through a commit log.

See :mod:`barrier_runtime.connectors.kafka` for the protocol (steps 1-4).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import sinks
from barrier_runtime.connectors import _kafka_client, _staging, errors

if TYPE_CHECKING:
    from confluent_kafka import Consumer, Message, Producer

COMMIT_TOPIC_SUFFIX = ".cjob-commits"


class KafkaSink(sinks.Sink):
    """Exactly-once output to one topic; see :mod:`barrier_runtime.connectors.kafka`."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        *,
        key_field: str | None = None,
        commit_topic: str | None = None,
        transactional_id_prefix: str | None = None,
        inline_limit: int = _staging.DEFAULT_INLINE_LIMIT,
        staging_url: str | None = None,
        timeout: float = 30.0,
        producer_config: Mapping[str, Any] | None = None,
    ) -> None:
        if inline_limit < 1:
            raise ValueError("inline_limit must be positive")
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.key_field = key_field
        self.commit_topic = commit_topic or f"{topic}{COMMIT_TOPIC_SUFFIX}"
        # Per topic by default, as the commit log is: two jobs whose steps share a name
        # must not fence each other's producers on one cluster.
        self.transactional_id_prefix = transactional_id_prefix or f"cjob-{topic}"
        self.inline_limit = inline_limit
        self.staging = None if staging_url is None else _staging.Staging(staging_url)
        self.timeout = timeout
        self.producer_config = dict(producer_config or {})
        self._log = _CommitLog(self)
        self._producers: dict[str, Producer] = {}
        """Each writer's transactional producer after a successful commit, for its next one."""
        self._log_read: set[str] = set()
        """Transactional ids whose commit log was read with the producer now kept: while it
        is not fenced, only it can add the writer's records, so the log need not be read
        again (it cost a consumer and a round trip per commit: ~50 ms of a ~70 ms commit)."""

    def __getstate__(self) -> dict[str, Any]:
        return {
            k: v for k, v in self.__dict__.items() if k not in ("_log", "_producers", "_log_read")
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._log = _CommitLog(self)
        self._producers = {}
        self._log_read = set()

    def describe(self) -> str:
        return f"Kafka topic {self.topic!r} at {self.bootstrap_servers}"

    def writer(self, step_id: str, subtask: int, parallelism: int) -> sinks.SinkWriter:
        return _KafkaWriter(self, step_id, subtask)

    def transactional_id(self, step: str, subtask: int) -> str:
        """The Kafka ``transactional.id`` of a writer (step and subtask), stable across restarts."""
        return f"{self.transactional_id_prefix}-{step}-{subtask}"

    def committed_up_to(self, step: str, subtask: int) -> int:
        """The highest checkpoint this writer has published (``-1``: none)."""
        return self._log.committed_up_to(f"{step}/{subtask}")

    def prepare(self, step: str, subtask: int) -> None:
        """Steps 1-2 ahead of the writer's first commit, when its subtask starts.

        Taking the producer (``init_transactions``: a coordinator round trip, a long one
        while the broker loads its transaction state) and reading the commit log would
        otherwise happen in the first checkpoint's commit, on the subtask's thread, and
        hold its output back that long. A broker that cannot be reached is reported at
        start, before any record is taken in. The producer is kept for the first commit
        with what it read, as after a successful commit.
        """
        transactional_id = self.transactional_id(step, subtask)
        producer = self._take_producer(transactional_id)  # Step 1
        if transactional_id not in self._log_read:  # Step 2
            self._log.committed_up_to(f"{step}/{subtask}")
            self._log_read.add(transactional_id)
        self._producers[transactional_id] = producer

    def commit(self, transaction: sinks.Transaction) -> None:
        txn: _staging.SinkTxn = transaction
        writer_key = f"{txn['step']}/{txn['subtask']}"
        transactional_id = self.transactional_id(txn["step"], txn["subtask"])
        producer = self._take_producer(transactional_id)  # Step 1
        reusable = True
        try:
            # Step 2: already published? (read once per producer, see _log_read)
            if transactional_id in self._log_read:
                published = self._log.known(writer_key)
            else:
                published = self._log.committed_up_to(writer_key)
                self._log_read.add(transactional_id)
            if published >= txn["checkpoint"]:
                self._finish_staged(txn)
                return
            entries = self._entries(txn)
            reusable = False
            self._publish(producer, txn, writer_key, entries)  # Steps 3-4
            reusable = True
        finally:
            if reusable:  # kept for the next commit; after a failure a new one fences it
                self._producers[transactional_id] = producer
            else:
                self._log_read.discard(transactional_id)
        self._log.remember(writer_key, txn["checkpoint"])
        self._finish_staged(txn)

    def commit_restored(self, transactions: Sequence[sinks.Transaction]) -> None:
        """Fence every writer's crashed predecessor first (step 1 for all), then commit each.

        One writer's commit reads the whole commit log, which another writer's
        predecessor, killed mid-commit, holds back until that writer is fenced. The
        producers are always new ones: one kept from an earlier restore in this process
        fences nothing and was itself fenced by the writers that ran since.
        """
        for transactional_id in dict.fromkeys(
            self.transactional_id(t["step"], t["subtask"]) for t in transactions
        ):
            self._producers.pop(transactional_id, None)
            self._producers[transactional_id] = self._take_producer(transactional_id)
        for transaction in transactions:
            self.commit(transaction)

    def _finish_staged(self, txn: _staging.SinkTxn) -> None:
        if self.staging is not None and "parts" in txn:
            self.staging.finish(txn)

    def _take_producer(self, transactional_id: str) -> Producer:
        """The writer's producer of its previous commit in this process, or a new one.

        A new one's ``init_transactions`` fences a crashed predecessor and aborts its open
        transaction. That comes before the commit log is read: a predecessor killed after
        writing its commit-log record but before committing holds the log's last stable
        offset back, so the read could not end until the broker's transaction timeout.
        """
        kept = self._producers.pop(transactional_id, None)
        if kept is not None:
            return kept
        self._log_read.discard(transactional_id)
        kafka = _kafka_client.import_kafka()
        producer: Producer = kafka.Producer(
            {
                "bootstrap.servers": self.bootstrap_servers,
                "transactional.id": transactional_id,
                "transaction.timeout.ms": max(60_000, int(self.timeout * 2000)),
                "logger": _kafka_client.client_log,
                **self.producer_config,
            }
        )
        try:
            producer.init_transactions(self.timeout)
        except kafka.KafkaException as exc:
            raise errors.BrokerUnavailableError(
                f"{self.describe()}: cannot start the transactional producer "
                f"{transactional_id!r}: {exc}"
            ) from exc
        return producer

    def _entries(self, txn: _staging.SinkTxn) -> Iterator[_staging.Entry]:
        if "records" in txn:
            return iter(txn["records"])
        if self.staging is None:
            raise errors.ConnectorError(
                f"{self.describe()}: a staged transaction needs the sink's staging_url"
            )
        entries = self.staging.entries(txn)
        if entries is None:
            raise self.staging.lost(txn, self.describe())
        return entries

    def _publish(
        self,
        producer: Producer,
        txn: _staging.SinkTxn,
        writer_key: str,
        entries: Iterator[Any],
    ) -> None:
        """Steps 3-4: the messages and the commit-log record in one Kafka transaction."""
        kafka = _kafka_client.import_kafka()
        try:
            producer.begin_transaction()
            for index, (key, payload) in enumerate(entries):  # Step 3
                headers: list[tuple[str, str | bytes | None]] = [
                    ("cjob-msg-id", _staging.message_id(txn, index))
                ]
                _produce(producer, self.topic, key, payload.encode(), headers)
            marker = json.dumps({"checkpoint": txn["checkpoint"], "nonce": txn["nonce"]})
            _produce(producer, self.commit_topic, writer_key, marker.encode(), [], partition=0)
            producer.commit_transaction(self.timeout)  # Step 4
        except kafka.KafkaException as exc:
            raise errors.BrokerUnavailableError(
                f"{self.describe()}: publishing checkpoint {txn['checkpoint']} of "
                f"{writer_key} failed: {exc}"
            ) from exc
        finally:
            producer.flush(0)

    def recover(self, step_id: str) -> None:
        if self.staging is not None:
            self.staging.recover(step_id)


def _produce(
    producer: Producer,
    topic: str,
    key: str | None,
    value: bytes,
    headers: list[tuple[str, str | bytes | None]],
    partition: int | None = None,
) -> None:
    """Produce, waiting for room when the client's local queue is full."""
    while True:
        try:
            if partition is None:
                producer.produce(topic, value=value, key=key, headers=headers)
            else:
                producer.produce(topic, value=value, key=key, headers=headers, partition=partition)
            return
        except BufferError:
            producer.poll(0.05)


class _CommitLog:
    """The highest committed checkpoint per writer, read from the compacted commit-log topic."""

    def __init__(self, sink: KafkaSink) -> None:
        self._sink = sink
        self._lock = threading.Lock()
        self._latest: dict[str, int] = {}
        self._next_offset = 0
        self._ensured = False

    def remember(self, writer_key: str, checkpoint: int) -> None:
        with self._lock:
            self._latest[writer_key] = max(checkpoint, self._latest.get(writer_key, -1))

    def committed_up_to(self, writer_key: str) -> int:
        """Read the log to its end; the writer's highest checkpoint in it."""
        with self._lock:
            self._ensure_topic()
            self._read_to_end()
            return self._latest.get(writer_key, -1)

    def known(self, writer_key: str) -> int:
        """The writer's highest checkpoint as last read or remembered, without reading."""
        with self._lock:
            return self._latest.get(writer_key, -1)

    def _ensure_topic(self) -> None:
        if not self._ensured:
            _kafka_client.create_topic(
                self._sink.bootstrap_servers,
                self._sink.commit_topic,
                1,
                config={"cleanup.policy": "compact"},
                timeout=self._sink.timeout,
            )
            self._ensured = True

    def _read_to_end(self) -> None:
        kafka = _kafka_client.import_kafka()
        consumer: Consumer = kafka.Consumer(
            {
                "bootstrap.servers": self._sink.bootstrap_servers,
                "group.id": "cjob-unused",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": 10,
                "logger": _kafka_client.client_log,
            }
        )
        deadline = time.monotonic() + self._sink.timeout
        end = _kafka_client.EndOfPartition()
        try:
            consumer.assign([kafka.TopicPartition(self._sink.commit_topic, 0, self._next_offset)])
            while time.monotonic() < deadline:
                for msg in consumer.consume(500, 0.05):
                    error = msg.error()
                    if error is not None and error.code() == kafka.KafkaError._PARTITION_EOF:
                        if end.reached(consumer, msg):
                            return
                        continue
                    if error is not None:
                        if error.fatal() or not error.retriable():
                            raise errors.BrokerUnavailableError(
                                f"reading commit log {self._sink.commit_topic!r}: {error.str()}"
                            )
                        continue
                    self._apply(msg)
        finally:
            consumer.close()
        raise errors.BrokerUnavailableError(
            f"could not read the commit log {self._sink.commit_topic!r} to its end within "
            f"{self._sink.timeout:g}s"
        )

    def _apply(self, msg: Message) -> None:
        key, value, offset = msg.key(), msg.value(), msg.offset()
        if offset is not None:
            self._next_offset = offset + 1
        if key is None or value is None:
            return
        checkpoint = int(json.loads(value)["checkpoint"])
        writer_key = key.decode()
        self._latest[writer_key] = max(checkpoint, self._latest.get(writer_key, -1))


class _KafkaWriter(sinks.SinkWriter):
    def __init__(self, sink: KafkaSink, step_id: str, subtask: int) -> None:
        self._sink = sink
        sink.prepare(step_id, subtask)
        self._buffer = _staging.TxnBuffer(
            step=step_id,
            subtask=subtask,
            staging=sink.staging,
            inline_limit=sink.inline_limit,
            describe=sink.describe(),
        )

    def write(self, records: Sequence[batch_mod.Record]) -> None:
        field = self._sink.key_field
        self._buffer.add(
            [
                [
                    None if field is None or r.get(field) is None else str(r[field]),
                    json.dumps(r, separators=(",", ":"), default=str),
                ]
                for r in records
            ]
        )

    def pre_commit(self, checkpoint_id: int) -> sinks.Transaction | None:
        return self._buffer.cut(checkpoint_id)
