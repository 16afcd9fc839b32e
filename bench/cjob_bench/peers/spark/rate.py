"""W4 on Spark Structured Streaming's ``rate`` source: when each micro-batch commits its events.

The ``micro-batch`` mode of :mod:`cjob_bench.peers.spark` on the ``rate``
source (``rowsPerSecond`` = the rate, ``numPartitions`` = P), a stateless
query whose ``foreachBatch`` collects the event timestamps of each
micro-batch, run for a fixed time. A record's latency is its micro-batch's
commit time (trigger start + ``triggerExecution`` from the query progress)
minus its ``timestamp``; :mod:`cjob_bench.workloads.w4` bins them.

Spark 4.3's ``real-time`` mode refuses the rate source
(``INPUT_STREAM_NOT_SUPPORTED``); :func:`real_time_mode` tries it and reports
what Spark answered (W4 on Kafka measures it).
"""

from __future__ import annotations

import dataclasses
import pathlib
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from cjob_bench.peers import spark as runner


@dataclasses.dataclass(frozen=True, slots=True)
class RateRun:
    """The timestamps (µs) each micro-batch read, by batch id, and the query's progress reports."""

    stamps: dict[int, npt.NDArray[np.int64]]
    reports: list[Any]

    def measured(self, *, warmup: float) -> Iterator[tuple[int, npt.NDArray[np.int64]]]:
        """Per micro-batch with input: its commit time (µs) and its events after ``warmup`` s."""
        first_ts = min((int(t.min()) for t in self.stamps.values() if len(t)), default=0)
        for progress in self.reports:
            t = self.stamps.get(progress["batchId"])
            if t is None or not len(t):
                continue
            start = np.datetime64(progress["timestamp"].rstrip("Z"), "us").astype(np.int64)
            committed_us = int(start) + int(progress["durationMs"]["triggerExecution"]) * 1000
            yield committed_us, t[t >= first_ts + int(warmup * 1e6)]


def micro_batches(
    spark: Any, *, rate: float, parallelism: int, seconds: float, work: pathlib.Path
) -> RateRun:
    """The query in the ``micro-batch`` mode for ``seconds``, then stopped."""
    from pyspark.sql import functions as F  # noqa: N812, PLC0415 (pyspark only here)

    stamps: dict[int, npt.NDArray[np.int64]] = {}

    def collect(batch: Any, batch_id: int) -> None:
        table = batch.select(F.unix_micros("timestamp").alias("t")).toArrow()
        stamps[batch_id] = table.column("t").to_numpy()

    stream = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", int(rate))
        .option("numPartitions", parallelism)
        .load()
    )
    writer = stream.writeStream.foreachBatch(collect).option(
        "checkpointLocation", str(work / "ss-checkpoint")
    )
    query = runner.trigger(writer, "micro-batch").start()
    time.sleep(seconds)  # the query runs for a fixed time; nothing to wait for
    query.stop()
    return RateRun(stamps, list(query.recentProgress))


def real_time_mode(spark: Any, rate: float, work: pathlib.Path) -> dict[str, Any]:
    """Try the ``real-time`` mode on the rate source; report what Spark says."""

    class Writer:
        def open(self, partition_id: int, epoch_id: int) -> bool:
            return True

        def process(self, row: Any) -> None:
            pass

        def close(self, error: Any) -> None:
            pass

    stream = spark.readStream.format("rate").option("rowsPerSecond", int(rate)).load()
    writer = stream.writeStream.foreach(Writer()).outputMode("update")
    if not hasattr(writer, "trigger"):
        return {"available": False, "why": "no DataStreamWriter.trigger"}
    try:
        query = (
            runner.trigger(writer, "real-time", real_time_batch="5 seconds")
            .option("checkpointLocation", str(work / "rtm-checkpoint"))
            .start()
        )
        query.awaitTermination(10)
        error = query.exception()
        query.stop()
    except Exception as exc:  # what Spark refuses is the finding
        return {"available": True, "ran": False, "spark_said": str(exc)[:400]}
    if error is not None:
        return {"available": True, "ran": False, "spark_said": str(error)[:400]}
    return {"available": True, "ran": True, "note": "started; latency not measured by this bench"}
