"""One measured run: fresh topics, a system started, the consumer, the live producer, the figures.

A run of ``system`` at ``rate`` events/s for ``seconds``:

1. create the input and output topics (P partitions each, names unique to the run);
2. start the system and wait until it runs (our job's subtasks run; Spark's query made
   progress once, after a warm-up query over its own topic of ``spark_warmup_records``);
3. start the latency consumer (:mod:`.consumer`) and wait until its partitions are assigned;
4. start the producer (:mod:`.producer`): ``rate * seconds`` records, live;
5. wait for the producer, then for the consumer (every record seen, or ``drain`` seconds
   after the producer's last record);
6. stop the system; return the consumer's, the producer's and the system's figures.
"""

from __future__ import annotations

import pathlib
import time
import uuid
from dataclasses import dataclass
from typing import Any, Protocol

from barrier_runtime.connectors.kafka import create_topic
from cjob_bench.workloads.w4_kafka import children, ours, records

SYSTEMS = ("ours-aligned", "ours-unaligned", "spark-real-time", "spark-micro-batch")


class Broker(Protocol):
    @property
    def bootstrap_servers(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Settings:
    seconds: float
    warmup: float
    partitions: int
    keys: int
    interval: float
    drain: float
    spark_libs: pathlib.Path
    work: pathlib.Path
    rtm_batch_duration: str = "5 minutes"
    spark_warmup_records: int = 20_000
    """Records of the Spark peer's warm-up query (0: none)."""


class Stoppable(Protocol):
    def stop(self) -> dict[str, Any]: ...


class SparkPeer:
    """The Spark peer's process (:mod:`cjob_bench.peers.spark.kafka`) as a started system."""

    def __init__(self, child: children.Child) -> None:
        self.child = child

    def stop(self) -> dict[str, Any]:
        try:
            self.child.tell("stop")
            return self.child.answer(120.0)
        finally:
            self.child.close()


def start_system(
    system: str,
    s: Settings,
    broker: Broker,
    runner: ours.OursRunner | None,
    topics: tuple[str, str],
    probe: bool = False,
) -> Stoppable:
    in_topic, out_topic = topics
    if system.startswith("ours-"):
        if runner is None:
            raise ValueError("our systems need an OursRunner")
        mode = system.removeprefix("ours-")
        return runner.start(mode, broker.bootstrap_servers, *topics, probe=probe)
    trigger = system.removeprefix("spark-")
    args = ["--bootstrap", broker.bootstrap_servers, "--in-topic", in_topic]
    args += ["--out-topic", out_topic, "--trigger", trigger, "--jars", str(s.spark_libs)]
    args += ["--checkpoint", str(s.work / f"spark-chk-{in_topic}")]
    args += ["--cores", str(s.partitions), "--partitions", str(s.partitions)]
    args += ["--batch-duration", s.rtm_batch_duration]
    if s.spark_warmup_records:
        warm = (f"{in_topic}-warm", f"{out_topic}-warm")
        for topic in warm:
            create_topic(broker.bootstrap_servers, topic, s.partitions)
        fill(broker.bootstrap_servers, warm[0], s.spark_warmup_records, s.partitions, s.keys)
        args += ["--warmup-in-topic", warm[0], "--warmup-out-topic", warm[1]]
    child = children.Child("cjob_bench.peers.spark.kafka", args, s.work / f"spark-{in_topic}.log")
    try:
        child.answer(240.0)  # {"ready": true}
    except BaseException:
        child.close(5)
        raise
    return SparkPeer(child)


def fill(bootstrap: str, topic: str, count: int, partitions: int, keys: int) -> None:
    """``count`` benchmark records into ``topic`` at once (the Spark peer's warm-up input)."""
    from confluent_kafka import Producer  # noqa: PLC0415

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    now_us = time.time_ns() // 1000
    for i in range(count):
        value = records.encode(i, keys=keys, ts_us=now_us)
        while True:
            try:
                producer.produce(topic, value=value, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(60):
        raise RuntimeError(f"could not write the warm-up records to {topic}")


def run(
    system: str,
    rate: float,
    s: Settings,
    broker: Broker,
    runner: ours.OursRunner | None,
    *,
    probe: bool = False,
) -> dict[str, Any]:
    """Steps 1-6 of the module docstring; the run's figures as one JSON-able dict.

    ``probe``: our job stamps when its map step ran (profile runs; not for comparisons)."""
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}; choose from {SYSTEMS}")
    count = int(rate * s.seconds)
    name = f"w4k-{uuid.uuid4().hex[:10]}"
    topics = (f"{name}-in", f"{name}-out")
    for topic in topics:  # Step 1
        create_topic(broker.bootstrap_servers, topic, s.partitions)
    started = time.time()
    system_run = start_system(system, s, broker, runner, topics, probe)  # Step 2
    startup = time.time() - started
    consumer = producer = None
    try:
        deadline = time.time() + s.seconds * 2 + s.drain + 10
        consumer = children.Child(  # Step 3
            "cjob_bench.workloads.w4_kafka.consumer",
            [
                "--bootstrap",
                broker.bootstrap_servers,
                "--topic",
                topics[1],
                "--count",
                str(count),
                "--warmup-records",
                str(int(rate * s.warmup)),
                "--deadline",
                str(deadline),
            ],
            s.work / f"consumer-{name}.log",
        )
        consumer.answer(60.0)
        producer = children.Child(  # Step 4
            "cjob_bench.workloads.w4_kafka.producer",
            [
                "--bootstrap",
                broker.bootstrap_servers,
                "--topic",
                topics[0],
                "--partitions",
                str(s.partitions),
                "--rate",
                str(rate),
                "--count",
                str(count),
                "--keys",
                str(s.keys),
            ],
            s.work / f"producer-{name}.log",
        )
        produced = producer.answer(s.seconds * 3 + 60)  # Step 5
        received = consumer.answer(max(1.0, deadline - time.time()) + 30)
    finally:
        for child in (producer, consumer):
            if child is not None:
                child.close(10)
        figures = system_run.stop()  # Step 6
    return {
        "system": system,
        "rate": rate,
        "seconds": s.seconds,
        "probe": probe,
        "startup_seconds": round(startup, 2),
        "producer": produced,
        **received,
        "system_figures": figures,
    }
