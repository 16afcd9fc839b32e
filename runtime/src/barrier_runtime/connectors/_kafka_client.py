"""Kafka client plumbing shared by the source and sink (``confluent-kafka`` is imported lazily)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from barrier_runtime.connectors import errors

if TYPE_CHECKING:
    from confluent_kafka import Consumer, Message

client_log = logging.getLogger("barrier_runtime.connectors.kafka.librdkafka")
"""Where the clients' own chatter goes (librdkafka logs through it, quietly)."""


def import_kafka() -> Any:
    try:
        import confluent_kafka  # noqa: PLC0415 - optional dependency, imported on first use
        import confluent_kafka.admin  # noqa: PLC0415
    except ImportError as exc:
        raise errors.ConnectorDependencyError(
            "the Kafka connector needs confluent-kafka: pip install 'confluent-kafka>=2.16'"
        ) from exc
    return confluent_kafka


def create_topic(
    bootstrap_servers: str,
    name: str,
    partitions: int = 1,
    *,
    config: Mapping[str, str] | None = None,
    timeout: float = 10.0,
) -> None:
    """Create a topic; one that already exists is left as it is."""
    kafka = import_kafka()
    admin = kafka.admin.AdminClient({"bootstrap.servers": bootstrap_servers, "logger": client_log})
    topic = kafka.admin.NewTopic(
        name, num_partitions=partitions, replication_factor=-1, config=dict(config or {})
    )
    for future in admin.create_topics([topic], request_timeout=timeout).values():
        try:
            future.result(timeout)
        except kafka.KafkaException as exc:
            if exc.args[0].code() != kafka.KafkaError.TOPIC_ALREADY_EXISTS:
                raise errors.BrokerUnavailableError(
                    f"cannot create Kafka topic {name!r} at {bootstrap_servers}: {exc}"
                ) from exc


def parse_partition(name: str) -> tuple[str, int]:
    """Split ``topic-3`` into ``("topic", 3)``.

    >>> parse_partition("orders.eu-12")
    ('orders.eu', 12)
    """
    topic, sep, number = name.rpartition("-")
    if not sep or not topic or not number.isdigit():
        raise ValueError(f"{name!r} is not a Kafka partition name (topic-N)")
    return topic, int(number)


class EndOfPartition:
    """Tells when a ``read_committed`` consumer has read all a partition held when it got there.

    Such a consumer reports the end of a partition (``_PARTITION_EOF``) at the *last
    stable offset*: the first offset of a transaction still open. A transaction whose
    commit has returned may still be open there for a moment (the broker writes the
    commit markers after answering), and a zombie's may be open until it is fenced or
    times out. So the end that counts is the *high watermark* the first end-of-partition
    fetch saw: :meth:`reached` is true once an end of partition is reported at or
    past it, with every transaction below it settled (committed records read, aborted
    ones skipped).
    """

    def __init__(self) -> None:
        self.target: int | None = None

    def reached(self, consumer: Consumer, eof: Message) -> bool:
        """Whether ``eof`` (an end-of-partition event) is at or past the target."""
        offset = eof.offset() or 0
        if self.target is None:
            kafka = import_kafka()
            partition = kafka.TopicPartition(eof.topic(), eof.partition())
            watermarks = consumer.get_watermark_offsets(partition, cached=True)
            high = -1 if watermarks is None else int(watermarks[1])
            self.target = max(high, offset)
        return offset >= self.target
