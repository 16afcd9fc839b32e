"""W5 on our runtime: :mod:`.w5_pipeline` submitted to local Spark (:mod:`cjob_bench.peers.ours`), timed like a user sees it.

Timed from submission to completion (start-up, source I/O and the final
end-of-input checkpoint included), with exactly-once aligned checkpoints to
the embedded S3 server every ``interval`` seconds. Every window result is
checked against the reference; latencies come from the read probe's log and
the sink's arrival times (:mod:`.latency`).
"""

from __future__ import annotations

import pathlib
import time
import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from barrier_runtime.driver.restart import Backoff
from barrier_runtime.spark import driver
from barrier_runtime.storage.embedded import EmbeddedS3Server
from cjob_bench.harness import checkpoint_counts, machine
from cjob_bench.peers import ours
from cjob_bench.workloads import data
from cjob_bench.workloads import w5_latency as latency

PIPELINE = str(pathlib.Path(__file__).with_name("w5_pipeline.py"))
BUCKET = ours.BUCKET


def run(
    spark: Any,
    s3: EmbeddedS3Server,
    dataset: data.WindowDataSet,
    work: pathlib.Path,
    *,
    parallelism: int,
    interval: float,
    batch_size: int,
    incremental: bool = False,
) -> dict[str, Any]:
    name = f"w5-{uuid.uuid4().hex[:8]}"
    output, reads = work / f"out-{name}", work / f"reads-{name}"
    reads.mkdir()
    args = ["--input", str(dataset.parquet), "--output", str(output), "--reads", str(reads)]
    args += ["--batch-size", str(batch_size), "--bound-ms", str(dataset.disorder_ms)]
    spec = ours.job_spec(
        PIPELINE,
        args,
        s3=s3,
        prefix=f"w5/{name}",
        parallelism=parallelism,
        checkpoint=ours.checkpoints(interval, incremental=incremental),
        restart=ours.no_restarts(Backoff(initial=0.2, max=1.0)),
    )
    load_before = machine.loadavg()
    started = time.time()
    job = driver.SparkDriver(spec, session=spark)
    result = job.run()
    wall = time.time() - started
    periodic, history = checkpoint_counts.periodic(
        job.job.checkpoint_stats(), result.final_checkpoint
    )
    results = pa.concat_tables([pq.read_table(p) for p in sorted(output.glob("*.parquet"))])
    got = data.WindowCounts(
        results.column("key").to_numpy(),
        results.column("window_start").to_numpy(),
        results.column("count").to_numpy(),
    )
    read_at, earliest = _reads(reads)
    complete = latency.completion_times(read_at, earliest)
    ends = got.starts + data.WINDOW_MS
    lat = results.column("arrived").to_numpy() - complete(ends)
    closed = ends - 1 <= dataset.max_ts - dataset.disorder_ms - 1
    durations = [e.duration for e in history if e.duration is not None]
    return {
        "system": "ours",
        "incremental": incremental,
        "wall_seconds": round(wall, 3),
        "events_per_second": round(dataset.events / wall),
        "attempts": result.attempts,
        "periodic_checkpoints_completed": periodic,
        "checkpoint_seconds_median": round(float(np.median(durations)), 4) if durations else None,
        "checkpoint_seconds": [round(d, 4) for d in durations],
        "checkpoint_state_bytes": [e.state_size for e in history if e.duration is not None],
        "checkpoint_uploaded_bytes": [e.uploaded_size for e in history if e.duration is not None],
        "window_results": len(got.counts),
        "latency_ms": latency.quantiles_ms(lat[closed]),
        "latency_ms_all_windows": latency.quantiles_ms(lat),
        "check": data.compare(got, dataset.reference),
        "loadavg_before": load_before,
        "loadavg_after": machine.loadavg(),
    }


def _reads(directory: pathlib.Path) -> tuple[latency.Times, latency.Ms]:
    walls: list[float] = []
    earliest: list[int] = []
    for path in directory.glob("reads-*.txt"):
        for line in path.read_text().splitlines():
            wall, ts = line.split()
            walls.append(float(wall))
            earliest.append(int(ts))
    return np.array(walls), np.array(earliest, np.int64)
