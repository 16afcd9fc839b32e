"""The embedded Apache Kafka broker's life cycle: start, restart, stop, and a broker that
cannot start (one JVM each; the shared session broker is ``kafka_broker``)."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("confluent_kafka", reason="the embedded Kafka broker needs confluent-kafka")

from barrier_runtime.connectors import embedded_kafka
from barrier_runtime.connectors.errors import EmbeddedBrokerError


def test_restart_keeps_topics_and_stop_leaves_nothing(kafka_libs, record_property) -> None:
    broker = embedded_kafka.EmbeddedKafkaBroker(libs=kafka_libs).start()
    try:
        record_property("kafka_version", broker.version)
        assert broker.version == embedded_kafka.kafka_version(kafka_libs)
        servers = broker.bootstrap_servers
        broker.create_topic("kept", partitions=2)
        broker.restart()
        assert broker.bootstrap_servers == servers  # same port, same data
        from barrier_runtime.connectors import kafka as kafka_conn

        assert kafka_conn.KafkaSource(servers, "kept").partitions() == ["kept-0", "kept-1"]
        pid, runtime_dir = broker.pid, broker._proc.runtime_dir
    finally:
        broker.stop()
    assert not broker.running and not runtime_dir.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(EmbeddedBrokerError, match="not running"):
        _ = broker.bootstrap_servers


def test_a_broker_that_cannot_start_is_one_error_with_its_log(kafka_libs) -> None:
    broker = embedded_kafka.EmbeddedKafkaBroker(
        libs=kafka_libs, properties={"num.network.threads": "not-a-number"}
    )
    with pytest.raises(EmbeddedBrokerError) as raised:
        broker.start()
    message = str(raised.value)
    assert "the end of its log" in message and "num.network.threads" in message, message
    assert not broker.running and broker._proc is None
