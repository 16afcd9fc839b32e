"""Exactly-once on real Spark (local mode, 3 worker processes) from Kafka to Kafka, on a
real Apache Kafka broker (KRaft; ``kafka_broker`` in ``tests/conftest.py``).

A deterministic stream (120 keys, 200 events each, with per-key sequence numbers, on six
partitions so that each of the three workers reads two) is produced once; the keyed
running count reads it with the bounded ``KafkaSource`` (offsets kept in the
checkpoints, on S3) and writes the counts with the transactional ``KafkaSink``, one
Kafka transaction per checkpoint and writer:

* worker processes SIGKILLed three times at random moments (their producers die with
  transactions open: the restored commits fence them);
* the driver process (``cjob run``) SIGKILLed once mid-run with its workers, then
  ``cjob run`` again with the same store, resuming from the latest completed checkpoint.

A ``read_committed`` consumer of the output topic must see exactly the crash-free
output: lost = duplicated = out-of-order = 0. The broker's version is printed and
recorded (``record_property``).
"""

from __future__ import annotations

import json
import pathlib
import time
import uuid

import pytest
from barrier_runtime_testing import spark_harness as h

pytest.importorskip("confluent_kafka", reason="the Kafka connector needs confluent-kafka")

import confluent_kafka

from barrier_runtime.connectors import kafka as kafka_conn
from barrier_runtime.spark import driver
from barrier_runtime.testing import check_exactly_once

pytestmark = [pytest.mark.s3, pytest.mark.slow]

PIPELINE = str(pathlib.Path(__file__).with_name("kafka_running_count_pipeline.py"))
KEYS, EVENTS_PER_KEY, PARTITIONS = 120, 200, 6
TOTAL = KEYS * EVENTS_PER_KEY
EXPECTED = [
    {"key": f"k{k}", "seq": s, "count": s + 1} for k in range(KEYS) for s in range(EVENTS_PER_KEY)
]


def _topic(kind: str) -> str:
    return f"{kind}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def in_topic(kafka_broker) -> str:
    """Every event, key ``k`` on partition ``k % PARTITIONS``, in per-key order."""
    topic = _topic("events")
    kafka_broker.create_topic(topic, partitions=PARTITIONS)
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": kafka_broker.bootstrap_servers, "enable.idempotence": True}
    )
    started = time.monotonic()
    for s in range(EVENTS_PER_KEY):
        for k in range(KEYS):
            value = json.dumps({"key": f"k{k}", "seq": s}).encode()
            while True:
                try:
                    producer.produce(topic, value=value, partition=k % PARTITIONS)
                    break
                except BufferError:
                    producer.poll(0.05)
    assert producer.flush(30) == 0
    print(f"Apache Kafka {kafka_broker.version}: produced {TOTAL} events to {topic} in "
          f"{time.monotonic() - started:.1f}s")  # fmt: skip
    return topic


def _out_topic(kafka_broker) -> str:
    topic = _topic("counts")
    kafka_broker.create_topic(topic, partitions=2)
    return topic


def _read_committed(servers: str, topic: str) -> list[dict]:
    """Every committed record of ``topic`` (a bounded ``read_committed`` read)."""
    source = kafka_conn.KafkaSource(servers, topic, bounded=True, batch_size=1000)
    rows: list[dict] = []
    for name in source.partitions():
        part = source.open(name, None)
        try:
            deadline = time.monotonic() + 60
            while (batch := part.next_batch()) is not None:
                rows.extend(batch)
                assert time.monotonic() < deadline, f"reading {name} never ended"
        finally:
            part.close()
    return rows


def _offsets_written(servers: str, topic: str) -> int:
    """The offsets ``topic`` holds (its high watermarks summed): every record written,
    committed or not, and the transaction markers; an upper bound of what is published.

    Not a ``read_committed`` read: between a driver's SIGKILL and its restart, the
    killed driver's open transaction holds that read back until the broker's
    transaction timeout (60 s); the restarted job fences it at once.
    """
    consumer = confluent_kafka.Consumer({"bootstrap.servers": servers, "group.id": "cjob-test"})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        return sum(
            consumer.get_watermark_offsets(confluent_kafka.TopicPartition(topic, p), timeout=10)[1]
            for p in partitions
        )
    finally:
        consumer.close()


def _args(servers: str, in_topic: str, out_topic: str, rate: float) -> list[str]:
    return ["--servers", servers, "--in-topic", in_topic, "--out-topic", out_topic,
            "--rate", str(rate)]  # fmt: skip


def _assert_exactly_once(kafka_broker, out_topic: str, record_property) -> None:
    record_property("kafka_version", kafka_broker.version)
    report = check_exactly_once(
        EXPECTED, _read_committed(kafka_broker.bootstrap_servers, out_topic)
    )
    print(f"Apache Kafka {kafka_broker.version} (KRaft); exactly-once check:", report.as_dict())
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0), (
        f"on Apache Kafka {kafka_broker.version}: {report}"
    )


def test_worker_processes_killed_three_times(
    spark, s3_env, kafka_broker, in_topic, record_property
) -> None:
    out_topic = _out_topic(kafka_broker)
    _, store_url = h.s3_urls(s3_env)
    args = _args(kafka_broker.bootstrap_servers, in_topic, out_topic, rate=800)
    spec = h.job_spec(PIPELINE, args, store_url, "default/kafka-count")
    h.run_with_worker_kills(driver.SparkDriver(spec, session=spark), kills=3)
    _assert_exactly_once(kafka_broker, out_topic, record_property)


def test_driver_killed_and_restarted(
    s3_env, kafka_broker, in_topic, tmp_path, record_property
) -> None:
    out_topic = _out_topic(kafka_broker)
    _, store_url = h.s3_urls(s3_env)
    servers = kafka_broker.bootstrap_servers
    command = [
        *h.CLI, "run", "--json", "-p", str(h.P), "--checkpoint-interval", "0.3",
        "--store", store_url, "--job", "default/kafka-driver-restart",
        "--restart-backoff", "0.2", PIPELINE, "--",
        *_args(servers, in_topic, out_topic, rate=700),
    ]  # fmt: skip
    h.kill_driver_and_run_again(
        command,
        tmp_path,
        out_url="",
        total=TOTAL,
        count_published=lambda: _offsets_written(servers, out_topic),
    )
    _assert_exactly_once(kafka_broker, out_topic, record_property)
