"""Benchmark W4: record latency at half of the maximum throughput, against Spark Structured Streaming.

    PYTHONPATH=runtime/src:bench .venv/bin/python -m cjob_bench run W4 [--seconds 25] [--rate EVENTS_PER_S] [--repeats 1]

Workload (:mod:`.w4_pipeline`): a rate-limited generator (``--rate``
events/s over P = 2 partitions, each record stamped with ``event_created`` =
the instant the rate made it due) → ``key_by`` → a per-record Python
``stateful_map`` (running count per key) → a sink that takes
``write time - event_created`` of every record (0.1 ms bins). Our runtime runs
inside a Spark barrier stage (``local[2]``, one warm SparkSession, checkpoints
to an embedded SeaweedFS S3 server), in this order:

1. the maximum throughput: the same pipeline without a rate limit and without
   periodic checkpoints, over ``--max-events`` (5 M: about as long as a measured
   run, so that it is the sustained rate rather than a burst this shared machine
   cannot keep up); skipped when ``--rate`` is given; the rate is half of it;
2. ``--seconds`` at that rate, per checkpoint mode: ``none`` (no periodic
   checkpoint), ``aligned`` and ``unaligned`` exactly-once checkpoints every 1 s,
   interleaved ``--repeats`` times (ABC, BCA, …);
3. Spark Structured Streaming on its ``rate`` source at the same rate, P = 2,
   ``trigger(processingTime='1 second')``, a stateless query whose
   ``foreachBatch`` collects the event timestamps of each micro-batch; a record's
   latency is its micro-batch's commit time (trigger start + ``triggerExecution``
   from the query progress) minus its ``timestamp``;
4. Spark 4.3's real-time mode (``trigger(realTime=...)``) on the same source:
   tried, and what Spark answered is reported.

The first ``--warmup`` seconds of every run are not measured. Prints one JSON
document on stdout; progress goes to stderr. Figures are only comparable within
one run on one machine.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import tempfile
import time
import uuid
from typing import Any

import numpy as np

from barrier_runtime.core import latency
from barrier_runtime.driver.restart import Backoff
from barrier_runtime.spark import driver
from barrier_runtime.storage.embedded import EmbeddedS3Server
from cjob_bench.harness import bytecode, machine
from cjob_bench.harness import runs as harness
from cjob_bench.peers import ours
from cjob_bench.peers.spark import rate as spark_rate
from cjob_bench.workloads import w4_pipeline

PIPELINE = str(pathlib.Path(__file__).with_name("w4_pipeline.py"))
BUCKET = ours.BUCKET
MODES = ("none", "aligned", "unaligned")
QUANTILES = {"p50": 0.5, "p99": 0.99, "p99_9": 0.999}


log = harness.logger("w4")


def quantiles_ms(bins: np.ndarray, bin_ns: int) -> dict[str, float | None]:
    """Quantiles of a latency histogram (upper edge of the bin that holds each), in ms."""
    total = int(bins.sum())
    if not total:
        return dict.fromkeys(QUANTILES)
    cumulative = np.cumsum(bins)
    out: dict[str, float | None] = {}
    for name, q in QUANTILES.items():
        index = int(np.searchsorted(cumulative, q * total, side="left"))
        out[name] = round((index + 1) * bin_ns / 1e6, 2)
    out["max"] = round((int(np.flatnonzero(bins)[-1]) + 1) * bin_ns / 1e6, 2)
    return out


class Ours:
    def __init__(
        self, args: argparse.Namespace, s3: EmbeddedS3Server, spark: Any, work: pathlib.Path
    ):
        self.args, self.s3, self.spark, self.work = args, s3, spark, work

    def run(self, name: str, events: int, rate: float | None, mode: str) -> dict[str, Any]:
        a = self.args
        stamps = self.work / f"stamps-{name}"
        stamps.mkdir()
        args = ["--events", str(events), "--keys", str(a.keys), "--partitions", str(a.parallelism)]
        args += [
            "--batch-size",
            str(a.batch_size),
            "--warmup",
            str(a.warmup),
            "--stamps",
            str(stamps),
        ]
        if rate is not None:
            args += ["--rate", str(rate)]
        if a.switch_interval is not None:
            args += ["--switch-interval", str(a.switch_interval)]
        spec = ours.job_spec(
            PIPELINE,
            args,
            s3=self.s3,
            prefix=f"w4/{name}-{uuid.uuid4().hex[:8]}",
            parallelism=a.parallelism,
            checkpoint=ours.checkpoints(
                None if mode == "none" else a.interval, unaligned=mode == "unaligned"
            ),
            restart=ours.no_restarts(Backoff(initial=0.2)),
        )
        job = driver.SparkDriver(spec, session=self.spark)
        load_before = machine.loadavg()
        started = time.time()
        result = job.run()
        wall = time.time() - started
        marks = [json.loads(p.read_text()) for p in stamps.glob("*.json")]
        bins = np.zeros(w4_pipeline.MAX_BINS, dtype=np.int64)
        for m in marks:
            for index, n in m["bins"].items():
                bins[int(index)] += n
        first = min(m["first"] for m in marks)
        last = max(m["last"] for m in marks)
        records = sum(m["records"] for m in marks)
        runtime = job.job.runtime_metrics()
        stats = job.job.checkpoint_stats()
        out: dict[str, Any] = {
            "mode": mode,
            "rate_events_per_second": rate,
            "events": records,
            "wall_seconds": round(wall, 2),
            "sink_events_per_second": round(records / max(last - first, 1e-9)),
            "latency_ms": quantiles_ms(bins, w4_pipeline.BIN_NS),
            "measured_records": int(bins.sum()),
            "records_per_sink_write": round(records / max(1, sum(m["writes"] for m in marks)), 1),
            "checkpoints_completed": stats.counts.completed,
            "checkpoint_ms_median": _median_ms([e.duration for e in stats.history]),
            "alignment_ms_median": _median_ms([e.alignment_duration for e in stats.history]),
            "attempts": result.attempts,
            "runtime_metrics_bucket_bounds_ms": {
                kind: {
                    q: _ms(latency.combined(per_step.values()).quantile(v))
                    for q, v in (("p50", 0.5), ("p99", 0.99))
                }
                for kind, per_step in (
                    ("arrival", runtime.arrival_latency),
                    ("commit", runtime.commit_latency),
                )
            },
            "loadavg_before": load_before,
            "loadavg_after": machine.loadavg(),
        }
        if records != events:
            raise RuntimeError(f"{name}: the sink received {records} records, expected {events}")
        log(f"{name}: {json.dumps({k: v for k, v in out.items() if 'loadavg' not in k})}")
        return out


def _median_ms(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(float(np.median(known)) * 1000, 1) if known else None


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 3)


def spark_ss(
    spark: Any, args: argparse.Namespace, rate: float, work: pathlib.Path
) -> dict[str, Any]:
    """Micro-batches every second on the ``rate`` source: batch commit time minus event time."""
    bin_ns = w4_pipeline.BIN_NS
    bins = np.zeros(w4_pipeline.MAX_BINS, dtype=np.int64)
    batches = 0
    for committed_us, t in spark_rate.micro_batches(
        spark, rate=rate, parallelism=args.parallelism, seconds=args.seconds, work=work
    ).measured(warmup=args.warmup):
        lat_bins = np.clip((committed_us - t) * 1000 // bin_ns, 0, len(bins) - 1)
        bins += np.bincount(lat_bins, minlength=len(bins))
        batches += 1
    out = {
        "rate_events_per_second": int(rate),
        "seconds": args.seconds,
        "micro_batches_measured": batches,
        "measured_records": int(bins.sum()),
        "latency_ms": quantiles_ms(bins, bin_ns),
        "definition": "micro-batch commit (trigger start + triggerExecution) - rate-source timestamp",
        "query": "rate source (numPartitions=P) -> foreachBatch collecting timestamps; stateless",
        "trigger": "processingTime='1 second'",
    }
    log(f"spark-ss: {json.dumps(out)}")
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--seconds", type=float, default=25.0, help="length of each rate-limited run"
    )
    parser.add_argument("--rate", type=float, default=None, help="events/s (default: half of max)")
    parser.add_argument(
        "--max-events",
        type=int,
        default=5_000_000,
        help="events of the max run (long enough to measure a sustained rate, not a burst)",
    )
    parser.add_argument("--modes", default=",".join(MODES), help="checkpoint modes to run")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--interval", type=float, default=1.0, help="checkpoint interval, s")
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds not measured per run")
    parser.add_argument(
        "--switch-interval",
        type=float,
        default=None,
        help="the workers' GIL switch interval, s (Python's default: 0.005)",
    )
    parser.add_argument("--skip-spark-ss", action="store_true")
    parser.add_argument("--skip-real-time", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    bytecode.use_bytecode_cache()
    modes = [m for m in args.modes.split(",") if m]
    if unknown := set(modes) - set(MODES):
        raise SystemExit(f"unknown modes {sorted(unknown)}; choose from {MODES}")
    work = pathlib.Path(tempfile.mkdtemp(prefix="w4-bench-"))
    report: dict[str, Any] = {"workload": "W4 latency", "setup": vars(args) | {"modes": modes}}
    try:
        with harness.spark_and_s3(
            f"local[{args.parallelism}]",
            app_name="w4-bench",
            parallelism=args.parallelism,
            bucket=BUCKET,
        ) as (spark, s3):
            job = Ours(args, s3, spark, work)
            job.run("warmup", 100_000, None, "none")
            rate = args.rate
            if rate is None:
                peak = job.run("max", args.max_events, None, "none")
                report["max_throughput"] = peak
                rate = peak["sink_events_per_second"] / 2
            report["rate_events_per_second"] = round(rate)
            events = int(rate * args.seconds) // args.keys * args.keys
            runs: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
            for i in range(args.repeats if modes else 0):
                for mode in harness.rotated(modes, i):
                    runs[mode].append(job.run(f"{mode}-{i}", events, rate, mode))
            report["ours"] = {m: _summary(r) for m, r in runs.items()}
            if not args.skip_spark_ss:
                report["spark_ss"] = spark_ss(spark, args, rate, work)
            if not args.skip_real_time:
                report["spark_real_time_mode"] = spark_rate.real_time_mode(spark, rate, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=2))


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over repeats of each latency quantile, with the runs themselves."""
    medians = {
        q: float(np.median([r["latency_ms"][q] for r in runs if r["latency_ms"][q] is not None]))
        for q in (*QUANTILES, "max")
    }
    return {"latency_ms_median_of_repeats": medians, "runs": runs}


if __name__ == "__main__":
    main()
