"""Benchmark W4 on Kafka: end-to-end latency, ours (exactly-once) vs Spark real-time mode vs micro-batch.

    PYTHONPATH=runtime/src:bench .venv/bin/python -m cjob_bench run W4-kafka [--rates 1000,5000,20000,50000] [--table-rate 5000] \
        [--table-repeats 3] [--repeats 1] [--seconds 30] [--warmup 10] \
        [--profile-rate 5000] [--out bench/results/FILE.json]

One real Kafka broker (``EmbeddedKafkaBroker``: Apache Kafka, KRaft, on loopback; or
``--bootstrap`` for one of yours). For every run: a fresh input and output topic of P = 2
partitions; one producer process feeds ``rate * seconds`` deterministic records live (record
``i``: key ``k{i mod keys}``, per-key sequence number, 64-byte payload, stamped with the wall
clock when handed to the producer; ``linger.ms`` 5); the system under test parses each record,
applies the same light stateless transform and writes the output topic; one ``read_committed``
consumer process takes each output record's latency = when it received it minus the producer's
stamp. The first ``--warmup`` seconds of input are not measured. Systems (``--systems``):

- ``ours-aligned``, ``ours-unaligned``: KafkaSource → map → transactional KafkaSink,
  exactly-once checkpoints every ``--interval`` s to an embedded S3 server (SeaweedFS), on
  Spark ``local[2]`` (the runtime's barrier stage);
- ``spark-real-time``: Structured Streaming, ``trigger(realTime=...)``, update mode;
- ``spark-micro-batch``: Structured Streaming, ``trigger(processingTime='1 second')``;
  both with Spark's Kafka source and sink (``spark-sql-kafka-0-10``, jars from
  ``scripts/spark-kafka-fetch.sh``), ``local[2]``; Spark's Kafka sink is at-least-once.

Rates are swept upwards; at each rate the systems run interleaved (rotated per repeat); a
system that fell behind (see :mod:`cjob_bench.workloads.w4_kafka.consumer`) is not run at higher rates.
Prints one JSON document on stdout (every run, medians of repeats, the spread, the maximum
rate each system kept up with, a markdown table, machine facts and versions); progress goes to
stderr; ``--out`` also writes it to a file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import pathlib
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from cjob_bench.harness import bytecode
from cjob_bench.harness import runs as harness
from cjob_bench.workloads.w4_kafka import bench, facts, ours, report, runs


@dataclass(frozen=True)
class ExternalBroker:
    bootstrap_servers: str
    version: str | None = None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rates", default="1000,5000,20000,50000", help="events/s, ascending")
    parser.add_argument("--repeats", type=int, default=1, help="repeats at every rate")
    parser.add_argument("--table-rate", type=float, default=5000.0, help="the README's rate")
    parser.add_argument("--table-repeats", type=int, default=3, help="repeats at --table-rate")
    parser.add_argument("--seconds", type=float, default=30.0, help="input length of a run")
    parser.add_argument("--warmup", type=float, default=10.0, help="input seconds not measured")
    parser.add_argument("--systems", default=",".join(runs.SYSTEMS))
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--interval", type=float, default=1.0, help="our checkpoint interval, s")
    parser.add_argument("--drain", type=float, default=20.0, help="s to wait after the input")
    parser.add_argument("--profile-rate", type=float, default=None, help="probe runs of ours")
    parser.add_argument("--rtm-batch-duration", default="5 minutes")
    parser.add_argument("--bootstrap", default=None, help="use this Kafka broker")
    parser.add_argument("--broker-version", default=None, help="with --bootstrap")
    parser.add_argument(
        "--out",
        "--output",
        dest="out",
        type=pathlib.Path,
        default=None,
        help="also write JSON here",
    )
    ns = parser.parse_args(argv)
    ns.rate_list = [float(r) for r in ns.rates.split(",") if r]
    ns.system_list = [s for s in ns.systems.split(",") if s]
    if unknown := set(ns.system_list) - set(runs.SYSTEMS):
        parser.error(f"unknown systems {sorted(unknown)}; choose from {runs.SYSTEMS}")
    return ns


@contextlib.contextmanager
def kafka_broker(ns: argparse.Namespace) -> Iterator[Any]:
    if ns.bootstrap:
        yield ExternalBroker(ns.bootstrap, ns.broker_version)
        return
    from barrier_runtime.connectors.embedded_kafka import EmbeddedKafkaBroker  # noqa: PLC0415

    with EmbeddedKafkaBroker() as broker:
        yield broker


@contextlib.contextmanager
def our_runner(ns: argparse.Namespace) -> Iterator[ours.OursRunner | None]:
    if not any(s.startswith("ours-") for s in ns.system_list):
        yield None
        return
    with harness.spark_and_s3(
        f"local[{ns.partitions}]",
        app_name="w4-kafka-ours",
        parallelism=ns.partitions,
        bucket=ours.BUCKET,
    ) as (spark, s3):
        yield ours.OursRunner(spark, s3, parallelism=ns.partitions, interval=ns.interval)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ns = parse_args(argv)
    bytecode.use_bytecode_cache()
    libs = facts.spark_kafka_libs()
    work = pathlib.Path(tempfile.mkdtemp(prefix="w4-kafka-"))
    settings = runs.Settings(
        seconds=ns.seconds,
        warmup=ns.warmup,
        partitions=ns.partitions,
        keys=ns.keys,
        interval=ns.interval,
        drain=ns.drain,
        spark_libs=libs,
        work=work,
        rtm_batch_duration=ns.rtm_batch_duration,
    )
    started = time.time()
    machine_before = facts.machine()
    try:
        with kafka_broker(ns) as broker, our_runner(ns) as runner:
            bench.log(f"Kafka at {broker.bootstrap_servers} ({getattr(broker, 'version', None)})")
            results = bench.sweep(
                settings,
                ns.rate_list,
                ns.repeats,
                ns.system_list,
                broker,
                runner,
                table_rate=ns.table_rate,
                table_repeats=ns.table_repeats,
                profile_rate=ns.profile_rate,
            )
            version = getattr(broker, "version", None)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = report.summarise(results)
    document = {
        "workload": "W4 on Kafka: end-to-end latency, producer stamp -> read_committed consumer",
        "method": (__doc__ or "").split("\n\n", 2)[2],
        "setup": {k: v for k, v in vars(ns).items() if k not in ("out",)},
        "guarantees": {
            "ours-aligned": "exactly-once (Kafka transactions committed per checkpoint)",
            "ours-unaligned": "exactly-once (Kafka transactions committed per checkpoint)",
            "spark-real-time": "at-least-once (Spark's Kafka sink)",
            "spark-micro-batch": "at-least-once (Spark's Kafka sink)",
        },
        "machine": {"before": machine_before, "after": facts.machine()},
        "versions": facts.versions(version, libs),
        "wall_seconds": round(time.time() - started, 1),
        "summary": summary,
        "max_rate_kept_up": report.max_rate_kept_up(summary),
        "table_markdown": report.markdown_table(summary, ns.system_list),
        "profile": [r for r in results if r.get("probe")],
        "runs": [r for r in results if not r.get("probe")],
    }
    text = json.dumps(document, indent=2, default=str)
    if ns.out is not None:
        ns.out.write_text(text + "\n")
    print(text)
    print(document["table_markdown"], file=sys.stderr)
    return document


if __name__ == "__main__":
    main()
