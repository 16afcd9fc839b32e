"""Benchmark W5: a 1-minute tumbling count per key, ours against Spark Structured Streaming.

    PYTHONPATH=runtime/src:bench .venv/bin/python -m cjob_bench run W5 [--events 10000000]

Both systems read the same Parquet files (:mod:`cjob_bench.workloads.w5_data`: events in
global event-time order over ``--span-minutes``, ``--out-of-order`` of them
moved back by up to ``--disorder-ms``, which is also the watermark's bound),
at P = ``--parallelism`` on one warm ``local[P]`` SparkSession:

* ours: :mod:`.w5_pipeline` (``FileSource`` → ``key_by`` →
  ``window_agg(Tumbling(60 s), how="count")``), exactly-once aligned
  checkpoints every ``--interval`` s to the embedded S3 server, timed from
  submission to the end of the job (:mod:`cjob_bench.workloads.w5_ours`);
* Spark SS: ``withWatermark`` + ``groupBy(window, key).count()``, append mode,
  one file per ~1 s micro-batch, timed from the query's start until every
  window its final watermark closes has arrived (:mod:`cjob_bench.peers.spark.windows`);
  ``spark_ss`` at the issue's ~1 s cadence (``processingTime="1 second"``) and
  ``spark_ss_unthrottled`` with the same micro-batches back to back
  (``processingTime="0 seconds"``), Spark's best case.

Each run's windows are checked against the exact counts (missing, extra,
wrong: all must be 0). Latency per window result: arrival at the sink minus
the moment the system had read every event of the window
(:mod:`cjob_bench.workloads.w5_latency`). One unmeasured warm-up run each on a small
data set, then ``--repeats`` interleaved repeats (the order reverses every other repeat);
the summary takes medians. Prints one JSON document on stdout (also written to
``--output``); progress goes to stderr. Only ratios within one run mean much.
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import shutil
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from cjob_bench.harness import bytecode, machine
from cjob_bench.harness import runs as harness
from cjob_bench.peers.spark import windows as spark_peer
from cjob_bench.workloads import data
from cjob_bench.workloads import w5_ours as ours

SYSTEMS = ("ours", "spark_ss", "spark_ss_unthrottled")


log = harness.logger("w5")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--files", type=int, default=8, help="Spark reads one per micro-batch")
    parser.add_argument("--span-minutes", type=int, default=100, help="event time covered")
    parser.add_argument("--out-of-order", type=float, default=0.01)
    parser.add_argument("--disorder-ms", type=int, default=5_000)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--interval", type=float, default=1.0, help="our checkpoint interval, s")
    parser.add_argument("--batch-size", type=int, default=65_536, help="our source batch size")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument(
        "--driver-memory", default="4g", help="the Spark driver JVM's heap (both systems use it)"
    )
    parser.add_argument(
        "--systems", default=",".join(SYSTEMS), help=f"which of {', '.join(SYSTEMS)} to run"
    )
    parser.add_argument("--output", type=pathlib.Path, default=None, help="also write JSON here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    ns = parse_args(argv)
    bytecode.use_bytecode_cache()
    work = pathlib.Path(tempfile.mkdtemp(prefix="w5-bench-"))
    doc: dict[str, Any] = {
        "benchmark": "python -m cjob_bench run W5",
        "date_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine.describe(),
        "config": {k: str(v) if isinstance(v, pathlib.Path) else v for k, v in vars(ns).items()},
    }
    try:
        started = time.monotonic()
        dataset = generate(ns, work / "data", ns.events)
        warm = generate(ns, work / "warm", max(ns.events // 50, 10_000))
        log(f"generated {ns.events:,} events in {time.monotonic() - started:.1f}s")
        with harness.spark_and_s3(
            f"local[{ns.parallelism}]",
            app_name="w5-bench",
            parallelism=ns.parallelism,
            bucket=ours.BUCKET,
            conf={"spark.driver.memory": ns.driver_memory},
            shuffle_partitions=ns.parallelism,
        ) as (spark, s3):
            systems: dict[str, Callable[[data.WindowDataSet], dict[str, Any]]] = {
                "ours": lambda d: ours.run(
                    spark,
                    s3,
                    d,
                    work,
                    parallelism=ns.parallelism,
                    interval=ns.interval,
                    batch_size=ns.batch_size,
                ),
                "spark_ss": lambda d: spark_peer.run(spark, d, work),
                "spark_ss_unthrottled": lambda d: spark_peer.run(
                    spark, d, work, mode="back-to-back"
                ),
            }
            chosen = ns.systems.split(",")
            if unknown := set(chosen) - set(systems):
                raise SystemExit(f"unknown systems {sorted(unknown)}; choose from {SYSTEMS}")
            systems = {name: run for name, run in systems.items() if name in chosen}
            for name, run in systems.items():
                log(f"warm-up {name}: {brief(run(warm))}")
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name in systems}
            for i in range(ns.repeats):
                for name in harness.interleaved(list(systems), i):
                    result = systems[name](dataset)
                    log(f"repeat {i} {name}: {brief(result)}")
                    runs[name].append(result)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    doc["runs"] = runs
    doc["summary"] = summary(runs)
    doc["machine"]["loadavg_at_end"] = machine.loadavg()
    text = json.dumps(doc, indent=2)
    if ns.output is not None:
        ns.output.write_text(text + "\n")
    print(text)


def generate(ns: argparse.Namespace, directory: pathlib.Path, events: int) -> data.WindowDataSet:
    return data.generate_windows(
        directory,
        events=events,
        keys=ns.keys,
        files=ns.files,
        span_ms=ns.span_minutes * 60_000,
        out_of_order=ns.out_of_order,
        disorder_ms=ns.disorder_ms,
        seed=ns.seed,
    )


def brief(result: dict[str, Any]) -> str:
    keys = ("wall_seconds", "events_per_second", "latency_ms", "check")
    return json.dumps({k: result.get(k) for k in keys})


def summary(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Medians per system, and ours over Spark's events/s."""
    out: dict[str, Any] = {}
    for name, results in runs.items():
        out[name] = {
            "events_per_second_median": float(np.median([r["events_per_second"] for r in results])),
            "latency_p99_ms_median": _median([r["latency_ms"]["p99"] for r in results]),
            "latency_p50_ms_median": _median([r["latency_ms"]["p50"] for r in results]),
            "all_runs_exact": all(not any(r["check"].values()) for r in results),
        }
    for peer in ("spark_ss", "spark_ss_unthrottled"):
        if "ours" in out and peer in out:
            out[f"throughput_ratio_ours_over_{peer}"] = round(
                out["ours"]["events_per_second_median"] / out[peer]["events_per_second_median"],
                2,
            )
    return out


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(float(np.median(known)), 1) if known else None


if __name__ == "__main__":
    main()
