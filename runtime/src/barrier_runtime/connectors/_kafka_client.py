"""Kafka client plumbing shared by the source and sink (``confluent-kafka`` is imported lazily)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from barrier_runtime.connectors import errors

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
