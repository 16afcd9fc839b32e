"""Benchmark: worker memory under back-pressure on real Spark, with unaligned checkpoints to S3.

Runs the throttled running count of :mod:`cjob_bench.probe` on
local Spark (P = 3 worker processes) against the embedded SeaweedFS S3
server: source at R events/s, the sink side paced at exactly R/10, 4 KiB of
payload on every event between the source and the count, unaligned
checkpoints every second. Every worker's VmRSS and the job's counters are
sampled every 0.25 s. Prints one JSON object: per worker the RSS baseline,
peak and second-half growth; the configured per-worker bound; source and
sink rates; unaligned checkpoint durations (p50/p99) and channel-state
sizes; the exactly-once check of the output. ``--compare-aligned`` runs the
same job with aligned checkpoints as well and reports their durations.
Exit status 0 when every worker stayed within the bound and the output is
exactly once (the same checks as
``tests/integration/barrier_runtime/spark/test_spark_backpressure.py``).

    PYTHONPATH=runtime/src:bench .venv/bin/python -m cjob_bench run backpressure [--quick] [--compare-aligned]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import sys
import uuid
from typing import Any

from barrier_runtime.connectors.files import FileSink
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.spark import config, driver, pipeline, session
from barrier_runtime.storage import embedded
from barrier_runtime.testing import check_exactly_once
from cjob_bench import probe

PIPELINE = (
    pathlib.Path(__file__).resolve().parents[3]
    / "tests/integration/barrier_runtime/spark/throttled_count_pipeline.py"
)
BUCKET = "cjob-bench"
CAPACITY, INTERVAL, WARMUP = 8, 1.0, 3.0
FLAT = 4 * probe.MiB


def run(
    spark: Any, s3: embedded.EmbeddedS3Server, job: probe.ThrottledJob, *, unaligned: bool
) -> dict[str, Any]:
    run_id = uuid.uuid4().hex[:8]
    out_url = s3.url(BUCKET, f"{run_id}/out")
    spec = driver.SparkJobSpec(
        pipeline=pipeline.PipelineRef.parse(str(PIPELINE), job.pipeline_args(out_url)),
        parallelism=job.parallelism,
        store=config.StoreRef(s3.url(BUCKET, f"{run_id}/cp"), "bench/backpressure"),
        checkpoint=CheckpointConfig(interval=INTERVAL, unaligned=unaligned, retained=1000),
        channel_capacity=CAPACITY,
    )
    result = probe.JobProbe(driver.SparkDriver(spec, session=spark)).run()
    bound = probe.in_flight_bound(job, CAPACITY, INTERVAL)
    figures = probe.summarise(result, job, bound, CAPACITY, WARMUP)
    report = check_exactly_once(job.expected_output(), list(FileSink(out_url).read_committed()))
    figures["exactly_once"] = report.as_dict()
    figures["within_bound"] = all(
        w["growth_mib"] * probe.MiB <= bound.total
        and w["growth_second_half_mib"] * probe.MiB <= FLAT
        for w in figures["workers"]
    )
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a shorter run (~15 s of data)")
    parser.add_argument(
        "--compare-aligned",
        action="store_true",
        help="also run with aligned checkpoints and compare durations",
    )
    args = parser.parse_args(argv)
    job = probe.ThrottledJob(events_per_key=150) if args.quick else probe.ThrottledJob()
    with embedded.EmbeddedS3Server(buckets=[BUCKET]) as s3:
        os.environ["AWS_ACCESS_KEY_ID"] = s3.access_key  # executors inherit the environment
        os.environ["AWS_SECRET_ACCESS_KEY"] = s3.secret_key
        spark = session.build_session(
            f"local[{job.parallelism}]", app_name="cjob-bench", parallelism=job.parallelism
        )
        try:
            unaligned = run(spark, s3, job, unaligned=True)
            aligned = run(spark, s3, job, unaligned=False) if args.compare_aligned else None
        finally:
            spark.stop()
    out: dict[str, Any] = {
        "benchmark": "spark_backpressure",
        "job": {
            **dataclasses.asdict(job),
            "total_events": job.total_events,
            "sink_rate": job.sink_rate,
            "channel_capacity": CAPACITY,
            "checkpoint_interval_s": INTERVAL,
            "master": f"local[{job.parallelism}]",
        },
        "unaligned": unaligned,
    }
    if aligned is not None:
        out["aligned_checkpoints"] = aligned["checkpoints"]
        a = aligned["checkpoints"]["duration_p50_s"]
        u = unaligned["checkpoints"]["duration_p50_s"]
        out["aligned_over_unaligned_p50"] = round(a / u, 1) if a and u else None
    counts = unaligned["exactly_once"]
    ok = unaligned["within_bound"] and not any(
        counts[k] for k in ("lost", "duplicated", "out_of_order")
    )
    out["target_met"] = ok
    print(json.dumps(out, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
