"""Kafka source and sink (confluent-kafka) against a real Apache Kafka broker (KRaft).

The broker (``kafka_broker`` in ``tests/conftest.py``, one per session) runs the
``kafka_2.13`` jars from Maven Central; every test keeps to topics of its own.
Covered: manual assignment and resume at an offset, bounded and unbounded reads,
malformed records, the transactional sink's idempotent commit, a zombie producer
fenced by the restored job's commit, exactly-once Kafka -> job -> Kafka through
injected crashes, and topics with more and with fewer partitions than the job's
parallelism. Exactly-once on real Spark with SIGKILLed workers and drivers is in
``tests/integration/barrier_runtime/spark/test_spark_kafka.py``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid

import pyarrow as pa
import pytest

pytest.importorskip("confluent_kafka", reason="the Kafka connector needs confluent-kafka")

import confluent_kafka
from prometheus_client import generate_latest
from waiting import wait_until

from barrier_runtime.api import Dataflow
from barrier_runtime.connectors import DiscardSink
from barrier_runtime.connectors import kafka as kafka_conn
from barrier_runtime.connectors.errors import (
    BrokerUnavailableError,
    ConnectorError,
    MalformedRecordError,
)
from barrier_runtime.control.metrics import JobMetrics
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.demo import count_event
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import (
    Crash,
    FaultInjector,
    FaultPoint,
    LocalExecutor,
    check_exactly_once,
)


def topic_name() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


def produce(servers: str, topic: str, messages: list[tuple[int, bytes]]) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": servers, "enable.idempotence": True})
    for partition, value in messages:
        producer.produce(topic, value=value, partition=partition)
    assert producer.flush(10) == 0


def drain(part, *, limit: float = 20.0) -> list[dict]:
    rows: list[dict] = []
    deadline = time.monotonic() + limit
    while (batch := part.next_batch()) is not None:
        rows.extend(batch)
        assert time.monotonic() < deadline, "a bounded partition never ended"
    return rows


def read_topic(servers: str, topic: str) -> list[dict]:
    """Every committed record of a topic, partition after partition (read_committed)."""
    source = kafka_conn.KafkaSource(servers, topic, bounded=True)
    rows: list[dict] = []
    for name in source.partitions():
        part = source.open(name, None)
        rows += drain(part)
        part.close()
    return rows


def test_source_hands_out_a_partial_batch_without_waiting_for_it_to_fill(kafka_broker) -> None:
    servers, topic = kafka_broker.bootstrap_servers, topic_name()
    kafka_broker.create_topic(topic, partitions=1)
    produce(servers, topic, [(0, json.dumps({"i": i}).encode()) for i in range(3)])
    # consume(500, 30) would hold these 3 records for 30 s, waiting for 497 more
    source = kafka_conn.KafkaSource(servers, topic, batch_size=500, poll_timeout=30.0)
    part = source.open(f"{topic}-0", None)
    started = time.monotonic()
    rows: list[dict] = []
    while len(rows) < 3:
        rows += part.next_batch() or []
    assert [r["i"] for r in rows] == [0, 1, 2]
    assert time.monotonic() - started < 10.0, "the source waited for a full batch"
    part.close()


def test_source_reads_assigned_partitions_and_resumes_at_an_offset(kafka_broker) -> None:
    servers, topic = kafka_broker.bootstrap_servers, topic_name()
    kafka_broker.create_topic(topic, partitions=2)
    produce(servers, topic, [(i % 2, json.dumps({"i": i}).encode()) for i in range(30)])
    source = kafka_conn.KafkaSource(servers, topic, bounded=True, include_metadata=True)
    assert source.partitions() == [f"{topic}-0", f"{topic}-1"]

    part = source.open(f"{topic}-1", None)
    rows = drain(part)
    assert [r["i"] for r in rows] == list(range(1, 30, 2))
    assert [r["_offset"] for r in rows] == list(range(15))
    assert part.snapshot() == 15  # the next offset to read
    part.close()

    resumed = source.open(f"{topic}-0", 10)  # as after a restore from a checkpoint holding 10
    assert [r["i"] for r in drain(resumed)] == [20, 22, 24, 26, 28]
    resumed.close()


def test_unbounded_source_waits_for_new_records(kafka_broker) -> None:
    servers, topic = kafka_broker.bootstrap_servers, topic_name()
    kafka_broker.create_topic(topic)
    part = kafka_conn.KafkaSource(servers, topic, poll_timeout=0.05).open(f"{topic}-0", None)
    try:
        assert part.next_batch() == []
        produce(servers, topic, [(0, b'{"n": 1}')])
        got: list[dict] = []
        deadline = time.monotonic() + 10
        while not got and time.monotonic() < deadline:
            got = list(part.next_batch())
        assert got == [{"n": 1}] and part.snapshot() == 1
    finally:
        part.close()


def test_malformed_record_is_named_or_skipped(kafka_broker) -> None:
    servers, topic = kafka_broker.bootstrap_servers, topic_name()
    kafka_broker.create_topic(topic)
    produce(servers, topic, [(0, b'{"n": 1}'), (0, b"{broken"), (0, b'{"n": 3}')])
    with pytest.raises(MalformedRecordError, match=rf"{topic}-0 .* at offset 1"):
        drain(kafka_conn.KafkaSource(servers, topic, bounded=True).open(f"{topic}-0", None))
    skipping = kafka_conn.KafkaSource(servers, topic, bounded=True, on_error="skip")
    part = skipping.open(f"{topic}-0", None)
    assert drain(part) == [{"n": 1}, {"n": 3}] and part.skipped == 1
    part.close()


def test_unknown_topic_is_a_clear_error(kafka_broker) -> None:
    with pytest.raises(ConnectorError, match=r"topic 'nope-never' does not exist"):
        kafka_conn.KafkaSource(kafka_broker.bootstrap_servers, "nope-never").partitions()


def test_sink_commit_is_transactional_and_idempotent(kafka_broker) -> None:
    servers, topic = kafka_broker.bootstrap_servers, topic_name()
    kafka_broker.create_topic(topic, partitions=2)
    sink = kafka_conn.KafkaSink(servers, topic, key_field="key")
    writer = sink.writer("out", 1, 2)
    writer.write([{"key": f"k{i % 4}", "n": i} for i in range(40)])
    txn = writer.pre_commit(3)
    sink.commit(txn)
    sink.commit(txn)  # re-commit after a restore
    fresh = kafka_conn.KafkaSink(servers, topic, key_field="key")  # another process
    fresh.commit(json.loads(json.dumps(txn)))
    assert fresh.committed_up_to("out", 1) == 3 and fresh.committed_up_to("out", 0) == -1

    rows = read_topic(servers, topic)
    assert sorted(r["n"] for r in rows) == list(range(40))
    for key in ("k0", "k1", "k2", "k3"):  # one key, one partition, in order
        ns = [r["n"] for r in rows if r["key"] == key]
        assert ns == sorted(ns)


def test_a_zombie_producer_is_fenced_by_the_restored_commit(kafka_broker, record_property) -> None:
    """The pre-crash producer of a writer died mid-commit (its transaction open); the
    restored job's commit of the same checkpoint (same ``transactional.id``) fences it:
    its commit fails with a fencing error and ``read_committed`` readers never see its
    records, only the restored commit's, once."""
    servers, topic, version = kafka_broker.bootstrap_servers, topic_name(), kafka_broker.version
    record_property("kafka_version", version)
    kafka_broker.create_topic(topic)
    sink = kafka_conn.KafkaSink(servers, topic)
    writer = sink.writer("out", 0, 1)
    writer.write([{"n": i} for i in range(5)])
    txn = writer.pre_commit(1)

    zombie = confluent_kafka.Producer(
        {"bootstrap.servers": servers, "transactional.id": sink.transactional_id("out", 0)}
    )
    zombie.init_transactions(10)
    zombie.begin_transaction()
    for i in range(5):
        zombie.produce(topic, value=json.dumps({"n": i, "zombie": True}).encode())
    assert zombie.flush(10) == 0  # sent, never committed: the "crash"

    kafka_conn.KafkaSink(servers, topic).commit(json.loads(json.dumps(txn)))  # the restored job

    with pytest.raises(confluent_kafka.KafkaException) as raised:
        zombie.commit_transaction(10)
    error = raised.value.args[0]
    fenced = (confluent_kafka.KafkaError._FENCED, confluent_kafka.KafkaError.PRODUCER_FENCED)
    fenced += (confluent_kafka.KafkaError.INVALID_PRODUCER_EPOCH,)
    assert error.code() in fenced or error.fatal(), f"Apache Kafka {version}: {error}"
    rows = read_topic(servers, topic)
    assert [r["n"] for r in rows] == list(range(5)), f"Apache Kafka {version}: {rows}"
    assert not any(r.get("zombie") for r in rows), f"Apache Kafka {version} showed the zombie's"


def _zombie_killed_mid_commit(sink: kafka_conn.KafkaSink, subtask: int, checkpoint: int) -> None:
    """A writer's producer that died after writing its commit-log record, before committing:
    its open transaction holds the commit log's last stable offset back until the broker's
    transaction timeout (60 s)."""
    zombie = confluent_kafka.Producer(
        {
            "bootstrap.servers": sink.bootstrap_servers,
            "transactional.id": sink.transactional_id("out", subtask),
            "transaction.timeout.ms": 60_000,
        }
    )
    zombie.init_transactions(10)
    zombie.begin_transaction()
    zombie.produce(sink.topic, value=json.dumps({"n": -1, "zombie": True}).encode())
    marker = json.dumps({"checkpoint": checkpoint, "nonce": "zombie"}).encode()
    zombie.produce(sink.commit_topic, key=f"out/{subtask}".encode(), value=marker, partition=0)
    assert zombie.flush(10) == 0  # sent, never committed: the "crash"


def _pre_committed(sink: kafka_conn.KafkaSink, subtask: int, checkpoint: int) -> dict:
    writer = sink.writer("out", subtask, 2)
    writer.write([{"n": subtask * 100 + i} for i in range(5)])
    txn = writer.pre_commit(checkpoint)
    return json.loads(json.dumps(txn))  # as read back from the checkpoint's metadata


def _counting_log_reads(sink: kafka_conn.KafkaSink, monkeypatch) -> list[int]:
    """A list that grows by one each time ``sink`` reads its commit log to the end."""
    reads: list[int] = []
    read_to_end = sink._log._read_to_end
    monkeypatch.setattr(sink._log, "_read_to_end", lambda: reads.append(1) or read_to_end())
    return reads


def test_a_writer_reads_the_commit_log_once_per_producer(kafka_broker, monkeypatch) -> None:
    """While a writer keeps its producer, only that producer can add the writer's commit-log
    records (a newer one would fence it), so its later commits skip the log read (a
    consumer and a round trip, most of a commit's time) and still publish each checkpoint
    once."""
    servers, topic = kafka_broker.bootstrap_servers, topic_name()
    kafka_broker.create_topic(topic)
    sink = kafka_conn.KafkaSink(servers, topic)
    reads = _counting_log_reads(sink, monkeypatch)
    for checkpoint in (1, 2, 3):
        sink.commit(_pre_committed(sink, 0, checkpoint))
    sink.commit(_pre_committed(sink, 0, 3))  # the same checkpoint again: already published
    assert len(reads) == 1
    rows = read_topic(servers, topic)
    assert sorted(r["n"] for r in rows) == sorted(list(range(5)) * 3)


def test_a_writer_is_ready_to_commit_when_it_starts(kafka_broker, monkeypatch) -> None:
    """A writer takes its transactional producer and reads the commit log when it is made
    (its subtask's start), so its first commit does neither: ``init_transactions`` waits
    for the broker's transaction coordinator, and on the subtask's thread that would hold
    the first checkpoint's output back."""
    servers, topic = kafka_broker.bootstrap_servers, topic_name()
    kafka_broker.create_topic(topic)
    sink = kafka_conn.KafkaSink(servers, topic)
    reads = _counting_log_reads(sink, monkeypatch)
    writer = sink.writer("out", 0, 1)
    assert len(reads) == 1
    ready = sink._producers[sink.transactional_id("out", 0)]
    writer.write([{"n": i} for i in range(5)])
    sink.commit(json.loads(json.dumps(writer.pre_commit(1))))
    assert len(reads) == 1 and sink._producers[sink.transactional_id("out", 0)] is ready
    assert sorted(r["n"] for r in read_topic(servers, topic)) == list(range(5))


def test_a_writer_without_a_broker_fails_at_start_with_one_clear_error() -> None:
    sink = kafka_conn.KafkaSink("127.0.0.1:1", "out-topic", timeout=2.0)
    with pytest.raises(BrokerUnavailableError, match=r"cannot start the transactional producer"):
        sink.writer("out", 0, 1)


def test_restored_commits_take_new_producers(kafka_broker) -> None:
    """The driver commits a restored checkpoint's transactions, then the workers' producers
    (same ``transactional.id``) fence the driver's. At the next restore the driver must not
    reuse that fenced producer: it takes a new one, reads the log, and publishes."""
    servers, topic = kafka_broker.bootstrap_servers, topic_name()
    kafka_broker.create_topic(topic)
    driver = kafka_conn.KafkaSink(servers, topic, timeout=10.0)
    driver.commit_restored([_pre_committed(driver, 0, 1)])
    worker = kafka_conn.KafkaSink(servers, topic, timeout=10.0)  # another process
    worker.commit(_pre_committed(worker, 0, 2))
    driver.commit_restored([_pre_committed(driver, 0, 3)])
    assert worker.committed_up_to("out", 0) == 3
    rows = read_topic(servers, topic)
    assert sorted(r["n"] for r in rows) == sorted(list(range(5)) * 3)


@pytest.mark.parametrize("writers", [1, 2])
def test_zombies_killed_mid_commit_do_not_stall_the_restored_commits(
    kafka_broker, writers: int
) -> None:
    """The restored job's commits fence every writer's zombie before reading the commit log,
    so they end at once (within a 10 s sink timeout, not the broker's 60 s) and publish
    each checkpoint once. With two writers, writer 0's commit would otherwise wait for
    writer 1's zombie."""
    servers, topic = kafka_broker.bootstrap_servers, topic_name()
    kafka_broker.create_topic(topic)
    before = kafka_conn.KafkaSink(servers, topic, timeout=10.0)
    txns = [_pre_committed(before, subtask, 4) for subtask in range(writers)]
    before.committed_up_to("out", 0)  # creates the commit log, as a first commit does
    for subtask in reversed(range(writers)):
        _zombie_killed_mid_commit(before, subtask, 4)

    restored = kafka_conn.KafkaSink(servers, topic, timeout=10.0)
    started = time.monotonic()
    restored.commit_restored(txns)
    took = time.monotonic() - started
    assert took < 10.0, f"the restored commits waited {took:.1f}s for the zombies' transactions"
    assert [restored.committed_up_to("out", s) for s in range(writers)] == [4] * writers
    rows = read_topic(servers, topic)
    expected = [subtask * 100 + i for subtask in range(writers) for i in range(5)]
    assert sorted(r["n"] for r in rows) == expected, rows


KEYS, PER_KEY, PARTITIONS = 60, 300, 3


def count_flow(servers: str, in_topic: str, out_topic: str) -> Dataflow:
    """The keyed running count, Kafka topic to Kafka topic (bounded, so the job ends)."""
    flow = Dataflow("kafka-count")
    source = kafka_conn.KafkaSource(servers, in_topic, bounded=True, batch_size=200)
    keyed = flow.source("events", source).key_by("by-key", "key")
    counted = keyed.stateful_map("count", count_event).map_batches("slow", _slow)
    counted.sink("out", kafka_conn.KafkaSink(servers, out_topic, key_field="key"))
    return flow


def _slow(batch: pa.RecordBatch) -> pa.RecordBatch:
    time.sleep(0.003)
    return batch


def produce_events(servers: str, topic: str, keys: int, per_key: int, partitions: int) -> None:
    """Key ``k{k}`` with per-key sequence numbers 0.. on partition ``k % partitions``."""
    events = [
        (k % partitions, json.dumps({"key": f"k{k}", "seq": s}).encode())
        for s in range(per_key)
        for k in range(keys)
    ]
    produce(servers, topic, events)


def expected_counts(keys: int, per_key: int) -> list[dict]:
    return [{"key": f"k{k}", "seq": s, "count": s + 1} for k in range(keys) for s in range(per_key)]


def test_kafka_to_kafka_running_count_is_exactly_once_through_crashes(
    kafka_broker, tmp_path, record_property
) -> None:
    servers = kafka_broker.bootstrap_servers
    record_property("kafka_version", kafka_broker.version)
    in_topic, out_topic = topic_name(), topic_name()
    kafka_broker.create_topic(in_topic, partitions=PARTITIONS)
    kafka_broker.create_topic(out_topic, partitions=2)
    produce_events(servers, in_topic, KEYS, PER_KEY, PARTITIONS)
    expected = expected_counts(KEYS, PER_KEY)
    P = FaultPoint
    injector = FaultInjector(
        [
            Crash(P.SNAPSHOT, task="count", checkpoint_id=3),
            Crash(P.PROCESSING, subtask=0, after_records=1_500, attempt=1),
            Crash(P.COMMIT, checkpoint_id=5, attempt=2),
        ]
    )
    result = LocalExecutor(
        count_flow(servers, in_topic, out_topic),
        parallelism=2,
        store=CheckpointStore(open_object_store(str(tmp_path / "cp")), "default/kafka"),
        config=CheckpointConfig(interval=0.05),
        fault_injector=injector,
    ).run()
    report = check_exactly_once(expected, read_topic(servers, out_topic))
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0), (
        f"Apache Kafka {kafka_broker.version}: {report}"
    )
    assert len(injector.fired) >= 3, injector.fired
    assert 3 <= result.restarts <= len(injector.fired), result.failures


@pytest.mark.parametrize(
    ("partitions", "parallelism"),
    [(5, 2), (1, 3)],
    ids=["more-partitions-than-parallelism", "fewer-partitions-than-parallelism"],
)
def test_partitions_and_parallelism_may_differ(
    kafka_broker, tmp_path, partitions, parallelism
) -> None:
    """Five partitions over two source subtasks (three and two each), and one partition
    over three (two subtasks read nothing): exactly-once through a crash either way."""
    servers, keys, per_key = kafka_broker.bootstrap_servers, 30, 100
    in_topic, out_topic = topic_name(), topic_name()
    kafka_broker.create_topic(in_topic, partitions=partitions)
    kafka_broker.create_topic(out_topic, partitions=2)
    produce_events(servers, in_topic, keys, per_key, partitions)
    injector = FaultInjector([Crash(FaultPoint.SNAPSHOT, task="count", checkpoint_id=2)])
    result = LocalExecutor(
        count_flow(servers, in_topic, out_topic),
        parallelism=parallelism,
        store=CheckpointStore(open_object_store(str(tmp_path / "cp")), "default/kafka-p"),
        config=CheckpointConfig(interval=0.05),
        fault_injector=injector,
    ).run()
    report = check_exactly_once(expected_counts(keys, per_key), read_topic(servers, out_topic))
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0), report
    assert injector.fired and result.restarts == 1, result.failures


def high_watermark(servers: str, topic: str, partition: int) -> int:
    """The partition's high watermark, asked of the broker by a client of its own."""
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": servers, "group.id": "probe", "isolation.level": "read_uncommitted"}
    )
    try:
        _, high = consumer.get_watermark_offsets(
            confluent_kafka.TopicPartition(topic, partition), timeout=10, cached=False
        )
    finally:
        consumer.close()
    return int(high)


def test_consumer_lag_is_a_metric_per_partition(kafka_broker, tmp_path, record_property) -> None:
    """``cjob_source_lag_records{step, partition}`` = the broker's high watermark minus the
    job's position. The job holds its first batch (a step that waits for the test), so
    its position stays where that batch ended while the metric is read."""
    servers, topic = kafka_broker.bootstrap_servers, topic_name()
    record_property("kafka_version", kafka_broker.version)
    kafka_broker.create_topic(topic, partitions=1)
    produce(servers, topic, [(0, json.dumps({"i": i}).encode()) for i in range(1000)])
    high = high_watermark(servers, topic, 0)
    release, held_rows = threading.Event(), []

    def hold(batch: pa.RecordBatch) -> pa.RecordBatch:
        held_rows.append(batch.num_rows)
        release.wait(60)
        return batch

    flow = Dataflow("kafka-lag")
    source = kafka_conn.KafkaSource(servers, topic, bounded=True, batch_size=100)
    flow.source("events", source).map_batches("hold", hold).sink("out", DiscardSink())
    executor = LocalExecutor(
        flow,
        parallelism=1,
        store=CheckpointStore(open_object_store(str(tmp_path / "cp")), "default/kafka-lag"),
        config=CheckpointConfig(interval=1e9),
    )
    metrics = JobMetrics(executor)
    job = threading.Thread(target=executor.run)
    job.start()
    try:
        wait_until(lambda: held_rows, 30, "the job's first batch")
        expected = f'partition="{topic}-0",step="events"}} {float(high - held_rows[0])}'

        def lag_line() -> str | None:
            text = generate_latest(metrics.registry).decode()
            lines = [line for line in text.splitlines() if f'partition="{topic}-0"' in line]
            return next((line for line in lines if line.endswith(expected)), None)

        line = wait_until(lag_line, 30, f"cjob_source_lag_records ending {expected}")
        assert line.startswith("cjob_source_lag_records{"), line
        assert high == 1000 and 0 < held_rows[0] <= 100, (high, held_rows)
    finally:
        release.set()
        job.join(60)
    assert not job.is_alive()
