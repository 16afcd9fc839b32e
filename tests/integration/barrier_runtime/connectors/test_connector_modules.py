"""Connector modules: broker client libraries stay optional."""

from __future__ import annotations

import pickle
import subprocess
import sys


def test_importing_connectors_loads_no_broker_client() -> None:
    code = (
        "import sys, barrier_runtime.connectors as c, barrier_runtime.connectors.nats, "
        "barrier_runtime.connectors.kafka\n"
        "c.NatsSink('nats://127.0.0.1:1', 'x'); c.KafkaSink('127.0.0.1:1', 't')\n"
        "print(sorted(m for m in ('nats', 'confluent_kafka') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_connectors_are_picklable_configuration(tmp_path) -> None:
    """Spark ships sources and sinks to workers by pickling them (no live clients inside)."""
    from barrier_runtime.connectors import FileSource, KafkaSink, KafkaSource, NatsSink, NatsSource

    objects = [
        FileSource(str(tmp_path), pattern="*.csv", column_types={"n": "int"}),
        NatsSource("nats://127.0.0.1:4222", "S", subjects=["S.a"], bounded=True),
        NatsSink("nats://127.0.0.1:4222", "out.{key}", staging_url=str(tmp_path)),
        KafkaSource("127.0.0.1:9092", "t", partitions=[0, 1]),
        KafkaSink("127.0.0.1:9092", "t", key_field="key", staging_url=str(tmp_path)),
    ]
    assert objects[0].partitions() == []  # opens its store: still picklable afterwards
    for obj in objects:
        copy = pickle.loads(pickle.dumps(obj))
        assert type(copy) is type(obj)
    assert pickle.loads(pickle.dumps(objects[3])).partitions() == ["t-0", "t-1"]
