"""W4 on Kafka for Spark Structured Streaming: Kafka source -> the same transform -> Kafka sink.

    python -m cjob_bench.peers.spark.kafka --bootstrap HOST:PORT --in-topic IN \
        --out-topic OUT --trigger real-time|micro-batch --checkpoint DIR --jars A.jar,B.jar

Runs in its own process with its own ``local[N]`` SparkSession (``spark.jars``: the connector
jars from ``scripts/spark-kafka-fetch.sh`` that pyspark does not ship). The query parses the
JSON value with ``from_json``, keeps ``i``, ``key``, ``seq``, ``ts``, replaces the payload by
its length and writes JSON to the output topic, keyed by ``key`` — the same work as
:func:`cjob_bench.workloads.w4_kafka.pipeline.transform`. Spark's Kafka sink is **at-least-once**.

With ``--warmup-in-topic`` the same query first runs once (``availableNow``) over that topic
into ``--warmup-out-topic``, so that the measured query starts in a warm JVM, as ours does
(the sweep warms our SparkSession once; every Spark peer run is a fresh process).

Modes of :mod:`cjob_bench.peers.spark`: ``real-time`` is ``trigger(realTime=...)`` in update output mode (Spark 4.x
real-time mode: long-running batches of ``--batch-duration``, records flow through as they
arrive); ``micro-batch`` is ``trigger(processingTime='1 second')``. Prints ``{"ready": true}``
once the query runs, then waits for a line on stdin (or its end), stops the query and prints
one JSON line with the query's progress figures.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
from collections.abc import Sequence
from typing import Any

from barrier_runtime.spark import session as session_mod
from cjob_bench.peers import spark as runner

TRIGGERS: tuple[runner.Mode, ...] = ("real-time", "micro-batch")
PYSPARK_JARS = pathlib.Path(str(__import__("pyspark").__file__)).parent / "jars"


def extra_jars(libs: pathlib.Path) -> list[pathlib.Path]:
    """The jars in ``libs`` whose artifact pyspark does not ship already (no duplicates)."""
    shipped = {_artifact(p.name) for p in PYSPARK_JARS.glob("*.jar")}
    return sorted(p for p in libs.glob("*.jar") if _artifact(p.name) not in shipped)


def _artifact(name: str) -> str:
    """The jar's artifact: its name without the version (the last dash-separated part).

    >>> _artifact("spark-sql-kafka-0-10_2.13-4.2.0.jar"), _artifact("kafka-clients-3.9.2.jar")
    ('spark-sql-kafka-0-10_2.13', 'kafka-clients')
    """
    stem = name.removesuffix(".jar")
    head, sep, version = stem.rpartition("-")
    return head if sep and version[:1].isdigit() else stem


def start_query(
    spark: Any, ns: argparse.Namespace, in_topic: str, out_topic: str, trigger: runner.Mode
) -> Any:
    from pyspark.sql import functions as F  # noqa: N812, PLC0415
    from pyspark.sql import types as T  # noqa: N812, PLC0415

    schema = T.StructType(
        [
            T.StructField("i", T.LongType()),
            T.StructField("key", T.StringType()),
            T.StructField("seq", T.LongType()),
            T.StructField("ts", T.LongType()),
            T.StructField("payload", T.StringType()),
        ]
    )
    source = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", ns.bootstrap)
        .option("subscribe", in_topic)
        .option("startingOffsets", "earliest")
        .option("kafka.fetch.max.wait.ms", "5")
        .load()
    )
    parsed = source.select(F.from_json(F.col("value").cast("string"), schema).alias("r"))
    out = parsed.select(
        F.col("r.key").alias("key"),
        F.to_json(
            F.struct(
                F.col("r.i").alias("i"),
                F.col("r.key").alias("key"),
                F.col("r.seq").alias("seq"),
                F.col("r.ts").alias("ts"),
                F.length("r.payload").alias("payload_len"),
            )
        ).alias("value"),
    )
    writer = (
        out.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", ns.bootstrap)
        .option("topic", out_topic)
        .option("kafka.linger.ms", "5")
        .option("checkpointLocation", f"{ns.checkpoint}-{trigger}-{in_topic}")
    )
    # the warm-up runs "available-now": what the topic holds, then the query ends
    writer = writer.outputMode("update" if trigger == "real-time" else "append")
    return runner.trigger(writer, trigger, real_time_batch=ns.batch_duration).start()


def warm_up(spark: Any, ns: argparse.Namespace, timeout: float = 240.0) -> None:
    """Run the same query once over the warm-up topic, so that the measured query starts in a
    JVM that has loaded and compiled its code, as our job's warm SparkSession has."""
    query = start_query(spark, ns, ns.warmup_in_topic, ns.warmup_out_topic, "available-now")
    try:
        if not query.awaitTermination(timeout):
            raise TimeoutError(f"the Spark warm-up query did not finish within {timeout:g}s")
    finally:
        query.stop()


def wait_ready(query: Any, timeout: float) -> None:
    """Until the query has made progress once (its first batch ran or is running)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if query.exception() is not None:
            raise RuntimeError(f"the Spark query failed: {query.exception()}")
        status = query.status
        if query.lastProgress is not None or status.get("isTriggerActive"):
            return
        time.sleep(0.1)
    raise TimeoutError(f"the Spark query made no progress within {timeout:g}s")


def progress_summary(query: Any) -> dict[str, Any]:
    progress = list(query.recentProgress)
    return {
        "batches": len(progress),
        "input_rows": sum(int(p.get("numInputRows", 0)) for p in progress),
        "trigger_execution_ms": [p["durationMs"].get("triggerExecution") for p in progress][-20:],
        "exception": None if query.exception() is None else str(query.exception())[:400],
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="w4kafka-spark")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--in-topic", required=True)
    parser.add_argument("--out-topic", required=True)
    parser.add_argument("--trigger", choices=TRIGGERS, required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--jars", required=True, help="the connector's libs directory")
    parser.add_argument("--cores", type=int, default=2, help="local[N]")
    parser.add_argument("--partitions", type=int, default=2, help="shuffle partitions")
    parser.add_argument("--batch-duration", default="5 minutes", help="real-time mode's batch")
    parser.add_argument("--warmup-in-topic", default=None, help="warm the JVM on it first")
    parser.add_argument("--warmup-out-topic", default=None)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    ns = parse_args(argv)
    jars = extra_jars(pathlib.Path(ns.jars))
    conf = {
        "spark.jars": ",".join(str(p) for p in jars),
        "spark.sql.shuffle.partitions": str(ns.partitions),
        "spark.sql.streaming.noDataMicroBatches.enabled": "false",
    }
    spark = session_mod.build_session(
        f"local[{ns.cores}]", app_name=f"w4kafka-{ns.trigger}", parallelism=1, conf=conf
    )
    try:
        if ns.warmup_in_topic:
            warm_up(spark, ns)
        query = start_query(spark, ns, ns.in_topic, ns.out_topic, ns.trigger)
        wait_ready(query, 120.0)
        print(json.dumps({"ready": True}), flush=True)
        sys.stdin.readline()
        summary = progress_summary(query)
        query.stop()
        print(json.dumps(summary), flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
