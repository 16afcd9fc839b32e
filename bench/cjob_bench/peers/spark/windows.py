"""W5 on Spark Structured Streaming: ``withWatermark`` + ``groupBy(window, key).count()``.

Run through the runner of :mod:`cjob_bench.peers.spark`, in its ``micro-batch`` or
``back-to-back`` mode.

The query, on the same Parquet files (``maxFilesPerTrigger=1``, one file per
micro-batch, ``trigger(processingTime="1 second")`` in the ``micro-batch`` mode,
``spark.sql.shuffle.partitions`` = P, state store and checkpoint on local
disk)::

    readStream.parquet(dir)
      .withColumn("event_time", timestamp_millis("ts"))
      .withWatermark("event_time", "<bound> milliseconds")
      .groupBy(window("event_time", "1 minute"), "key").count()

in ``append`` mode, so each window is emitted once, when the watermark has
passed it. ``foreachBatch`` takes each micro-batch's rows as Arrow and notes
their arrival time. Spark's watermark is the newest event time minus the
bound; it moves after the micro-batch that read the events, and a no-data
micro-batch then emits what it closed. Windows the final watermark does not
close are never emitted (Spark does not flush them at the end of the files);
the run ends when every window the final watermark closes has arrived.
``busy_fraction`` is the share of that time spent in micro-batches: near 1,
Spark is bound by its processing, not by the trigger's cadence. In the
``back-to-back`` mode (``processingTime="0 seconds"``) each micro-batch starts as soon as the last ended:
Spark's best case for the same micro-batches.

The clock runs from ``start()`` of the query on the warm SparkSession.
Read times for latency: each micro-batch's end (trigger start +
``triggerExecution``) with the smallest event time it read (its progress
report's ``eventTime.min``).
"""

from __future__ import annotations

import datetime
import pathlib
import time
from typing import Any

import numpy as np
import pyarrow as pa

from cjob_bench.harness import machine
from cjob_bench.peers import spark as runner
from cjob_bench.workloads import data
from cjob_bench.workloads import w5_latency as latency

POLL = 0.02
STALL = 60.0
"""Seconds without a new result after which the run ends (and its check fails)."""


def run(
    spark: Any,
    dataset: data.WindowDataSet,
    work: pathlib.Path,
    *,
    mode: runner.Mode = "micro-batch",
) -> dict[str, Any]:
    """One run in ``mode``: ``micro-batch`` (every 1 s) or ``back-to-back``."""
    from pyspark.sql import functions as sf  # noqa: PLC0415 (only where Spark runs)

    out = work / f"spark-w5-{time.monotonic_ns()}"
    arrived: list[pa.Table] = []
    expected = dataset.reference.closed_by(spark_final_watermark(dataset) - 1)

    def collect(batch: Any, batch_id: int) -> None:
        table = batch.toArrow()
        now = time.time()
        if table.num_rows:
            arrived.append(table.append_column("arrived", pa.array([now] * table.num_rows)))

    counts = (
        spark.readStream.schema(data.WINDOW_SCHEMA_DDL)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(dataset.parquet))
        .withColumn("event_time", sf.timestamp_millis("ts"))
        .withWatermark("event_time", f"{dataset.disorder_ms} milliseconds")
        .groupBy(sf.window("event_time", "1 minute"), "key")
        .count()
        .select("key", sf.unix_millis(sf.col("window.start")).alias("window_start"), "count")
    )
    load_before = machine.loadavg()
    started = time.time()
    writer = (
        counts.writeStream.outputMode("append")
        .foreachBatch(collect)
        .option("checkpointLocation", str(out / "checkpoint"))
    )
    query = runner.trigger(writer, mode).start()
    try:
        last_change, rows = time.time(), 0
        while rows < len(expected.counts):
            if query.exception() is not None:
                raise runner.SparkQueryFailedError(f"Spark query failed: {query.exception()}")
            if time.time() - last_change > STALL:
                break  # the check below reports what is missing
            time.sleep(POLL)
            now_rows = sum(t.num_rows for t in arrived)
            if now_rows != rows:
                last_change, rows = time.time(), now_rows
        wall = max(float(t.column("arrived").to_numpy().max()) for t in arrived) - started
    finally:
        query.stop()
        runner.unload_state_stores(spark)
    results = pa.concat_tables(arrived)
    got = data.WindowCounts(
        results.column("key").to_numpy(),
        results.column("window_start").to_numpy(),
        results.column("count").to_numpy(),
    )
    progress = [p for p in query.recentProgress if int(p["numInputRows"]) > 0]
    read_at = np.array([_ended(p) for p in progress])
    earliest = np.array([_ms(p["eventTime"]["min"]) for p in progress], np.int64)
    complete = latency.completion_times(read_at, earliest)
    lat = results.column("arrived").to_numpy() - complete(got.starts + data.WINDOW_MS)
    return {
        "system": "spark_ss",
        "trigger_processing_time": runner.trigger_kwargs(mode)["processingTime"],
        "wall_seconds": round(wall, 3),
        "events_per_second": round(dataset.events / wall),
        "micro_batches_with_input": len(progress),
        "busy_fraction": round(
            sum(p["durationMs"]["triggerExecution"] for p in query.recentProgress) / 1000 / wall, 3
        ),
        "input_rows": sum(int(p["numInputRows"]) for p in progress),
        "window_results": len(got.counts),
        "latency_ms": latency.quantiles_ms(lat),
        "check": data.compare(got, expected),
        "windows_not_emitted": len(dataset.reference.counts) - len(expected.counts),
        "loadavg_before": load_before,
        "loadavg_after": machine.loadavg(),
    }


def spark_final_watermark(dataset: data.WindowDataSet) -> int:
    """Spark's watermark after every file: the newest event time minus the bound."""
    return dataset.max_ts - dataset.disorder_ms


def _ended(progress: dict[str, Any]) -> float:
    took = float(progress["durationMs"]["triggerExecution"])
    return _ms(progress["timestamp"]) / 1000 + took / 1000


def _ms(iso: str) -> int:
    moment = datetime.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return round(moment.timestamp() * 1000)
