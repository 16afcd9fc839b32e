"""Benchmark W1: keyed running sum on real local Spark, against Spark Structured Streaming.

    PYTHONPATH=runtime/src:bench .venv/bin/python -m cjob_bench run recovery [--events 10000000] [--repeats 5]

Workload W1: a keyed running sum of ``--events`` events (int64 key uniform
over 100,000 keys, int64 value), P = 2, run by our runtime inside a Spark
barrier stage (``local[2]``, one Python worker process per slice) through the
vectorised path (columnar generator → key_by column → ``sum`` → discarding
sink; :mod:`.recovery_pipeline`). Measured, all in one run with one warm
SparkSession and one embedded SeaweedFS S3 server:

1. ours without periodic checkpoints and with exactly-once (aligned)
   checkpoints every 1 s to S3, alternated ``--repeats`` times;
2. recovery: one worker process SIGKILLed 0.3 s after the first checkpoint
   completed; the time from the kill until the first record reaches the sink
   of the restarted attempt (restored from S3); the final state is checked
   against the analytic per-key sums;
3. Spark Structured Streaming on the same events written as Parquet files:
   ``readStream.parquet`` → ``groupBy("key").sum("value")`` → ``noop`` sink,
   update mode, checkpointLocation on local disk, ``trigger(availableNow)``.

Definitions (also in the JSON): *end-to-end* events/s = events / wall time
from job submission to completion, with the SparkSession already running;
*processing* events/s = events / time from the first to the last record at
the sink (ours) or / summed micro-batch ``triggerExecution`` time (Spark SS).
Targets are judged on the less favourable of the two measures. Prints one
JSON document on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import statistics
import tempfile
import time
import uuid
from typing import Any

import numpy as np
import pyarrow as pa

from barrier_runtime.connectors.columnar_generator import ColumnarGeneratorSource
from barrier_runtime.core import metadata
from barrier_runtime.driver.restart import Backoff
from barrier_runtime.spark import driver, session
from barrier_runtime.storage.embedded import EmbeddedS3Server
from cjob_bench.extras import recovery_measure as w1_measure
from cjob_bench.extras import recovery_report as w1_report
from cjob_bench.harness import runs as harness
from cjob_bench.harness.runs import s3_credentials
from cjob_bench.peers import ours
from cjob_bench.workloads import data

PIPELINE = str(pathlib.Path(__file__).with_name("recovery_pipeline.py"))
BUCKET = ours.BUCKET
NO_CHECKPOINTS = ours.NO_CHECKPOINTS
"""Periodic interval of the run "without checkpoints" (the end-of-input checkpoint remains)."""


log = harness.logger("w1")


# -- our runtime ------------------------------------------------------------------------------


class Bench:
    def __init__(
        self, args: argparse.Namespace, s3: EmbeddedS3Server, spark: Any, work: pathlib.Path
    ):
        self.args = args
        self.s3 = s3
        self.spark = spark
        self.work = work
        self.loads: list[list[float]] = []

    def source(self, events: int) -> ColumnarGeneratorSource:
        a = self.args
        return ColumnarGeneratorSource(
            events=events,
            keys=a.keys,
            partitions=a.parallelism,
            batch_size=a.batch_size,
            seed=a.seed,
        )

    def spec(
        self, name: str, events: int, interval: float, stamps: pathlib.Path
    ) -> driver.SparkJobSpec:
        a = self.args
        args = [
            "--events",
            str(events),
            "--keys",
            str(a.keys),
            "--partitions",
            str(a.parallelism),
            "--batch-size",
            str(a.batch_size),
            "--seed",
            str(a.seed),
            "--stamps",
            str(stamps),
        ]
        return ours.job_spec(
            PIPELINE,
            args,
            s3=self.s3,
            prefix=f"w1/{name}-{uuid.uuid4().hex[:8]}",
            parallelism=a.parallelism,
            checkpoint=ours.checkpoints(interval),
            restart=driver.RestartSettings(
                max_restarts=3, window=600, backoff=Backoff(initial=a.restart_delay, max=5.0)
            ),
        )

    def run_ours(
        self, name: str, events: int, interval: float, *, kill: bool = False
    ) -> dict[str, Any]:
        stamps = self.work / f"stamps-{name}"
        stamps.mkdir()
        spec = self.spec(name, events, interval, stamps)
        job = driver.SparkDriver(spec, session=self.spark)
        monitor = w1_measure.Monitor(job, kill_after_first_checkpoint=kill)
        meter = w1_measure.CpuMeter(self.s3.pid)
        load_before = w1_report.loadavg()
        monitor.start()
        meter.start()
        started = time.time()
        try:
            result = job.run()
        finally:
            monitor.stop()
        ended = time.time()
        cpu = meter.stop()
        cpu["workers"] = round(sum(monitor.worker_cpu.values()), 3)
        cpu["total"] = round(sum(v for v in cpu.values() if v is not None), 3)
        self.loads.append(w1_report.loadavg())
        marks = [json.loads(p.read_text()) for p in stamps.glob("*.json")]
        periodic = {
            cid: d for cid, d in monitor.durations.items() if cid != result.final_checkpoint
        }
        out: dict[str, Any] = {
            "events": events,
            "wall_seconds": round(ended - started, 3),
            "end_to_end_events_per_second": round(events / (ended - started)),
            "attempts": result.attempts,
            "checkpoint_interval_seconds": None if interval >= NO_CHECKPOINTS else interval,
            "periodic_checkpoints_completed": len(periodic),
            "periodic_checkpoint_seconds": [round(d, 4) for _, d in sorted(periodic.items())],
            "periodic_checkpoint_alignment_seconds": [
                round(monitor.alignments[cid], 4) for cid in sorted(periodic)
            ],
            "final_checkpoint_seconds": w1_report.rounded(
                monitor.durations.get(result.final_checkpoint or -1)
            ),
            "checkpoint_state_bytes": monitor.sizes.get(max(periodic), 0) if periodic else None,
            "cpu_seconds": cpu,
            "loadavg_before": load_before,
            "loadavg_after": self.loads[-1],
        }
        if not kill:
            first = min(m["first"] for m in marks)
            last = max(m["last"] for m in marks)
            records = sum(m["records"] for m in marks)
            if records != events:
                raise RuntimeError(
                    f"{name}: the sink received {records} records, expected {events}"
                )
            out |= {
                "processing_seconds": round(last - first, 3),
                "processing_events_per_second": round(events / (last - first)),
                "startup_seconds": round(first - started, 3),
            }
        else:
            out["recovery"] = self._recovery(monitor, marks, result, spec, events)
        log(f"{name}: {json.dumps({k: v for k, v in out.items() if 'loadavg' not in k})}")
        return out

    def _recovery(
        self,
        monitor: w1_measure.Monitor,
        marks: list[dict[str, Any]],
        result: Any,
        spec: driver.SparkJobSpec,
        events: int,
    ) -> dict[str, Any]:
        if monitor.killed_at is None:
            return {"measured": False, "why": "the job ended before a checkpoint completed"}
        resumed = min(
            (
                m["first"]
                for m in marks
                if m["pid"] not in monitor.killed_pids and m["first"] > monitor.killed_at
            ),
            default=None,
        )
        if resumed is None:
            return {"measured": False, "why": "no record reached the sink after the kill"}
        k = monitor.killed_at
        return {
            "measured": True,
            "seconds": round(resumed - k, 3),
            "definition": "SIGKILL of one worker process -> first record at the sink of the restarted attempt",
            "killed_worker_pid": monitor.killed_pid,
            "latest_completed_checkpoint_at_kill": monitor.completed_at_kill,
            "restored_from_checkpoint": result.restored_from[-1],
            "timeline_seconds_after_kill": {
                "failure_detected_by_driver": w1_report.rounded(
                    w1_report.minus(monitor.failure_seen_at, k)
                ),
                "new_attempt_created": w1_report.rounded(
                    w1_report.minus(monitor.new_attempt_at, k)
                ),
                "new_workers_running": w1_report.rounded(w1_report.minus(monitor.new_ready_at, k)),
                "first_record_at_sink": round(resumed - k, 3),
            },
            "restart_backoff_initial_seconds": spec.restart.backoff.initial,
            "final_state_equals_analytic_sums": self._state_is_exact(spec, result, events),
        }

    def _state_is_exact(self, spec: driver.SparkJobSpec, result: Any, events: int) -> bool:
        """The final checkpoint's per-key sums equal the sums of all events (no loss, no duplicate)."""
        store = spec.store.open()
        meta = store.load(result.final_checkpoint)
        got: dict[int, int] = {}
        for handle in meta.state_handles:
            if handle.step_id == "sum" and handle.kind is metadata.HandleKind.KEYED:
                table = pa.ipc.open_stream(pa.py_buffer(store.read_state(handle))).read_all()
                got.update(
                    zip(
                        table.column("key").to_pylist(),
                        table.column("value").to_pylist(),
                        strict=True,
                    )
                )
        expected = np.zeros(self.args.keys, dtype=np.int64)
        for table in data.generated_chunks(self.source(events), 1_000_000):
            keys, values = table.column("key").to_numpy(), table.column("value").to_numpy()
            # float64 weights are exact here: every partial sum stays far below 2**53
            expected += np.bincount(keys, weights=values, minlength=self.args.keys).astype(np.int64)
        want = {k: int(v) for k, v in enumerate(expected.tolist()) if k in got or v}
        return got == want


# -- main ---------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=65_536)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--recovery-events",
        type=int,
        default=None,
        help="events of the recovery run (default: 3 x --events, at least 20M)",
    )
    parser.add_argument(
        "--restart-delay",
        type=float,
        default=0.2,
        help="initial restart backoff of the driver, seconds",
    )
    parser.add_argument(
        "--sustained-events",
        type=int,
        default=None,
        help="events of the longer runs that measure the checkpoint overhead over many "
        "checkpoints (default: 10 x --events; 0 skips them)",
    )
    parser.add_argument("--skip-recovery", action="store_true")
    parser.add_argument("--skip-spark-ss", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.sustained_events is None:
        args.sustained_events = 10 * args.events
    recovery_events = args.recovery_events or max(3 * args.events, 20_000_000)
    work = pathlib.Path(tempfile.mkdtemp(prefix="w1-bench-"))
    log(
        f"W1: {args.events:,} events, P={args.parallelism}, load {w1_report.loadavg()}; work dir {work}"
    )
    try:
        with EmbeddedS3Server(buckets=[BUCKET]) as s3, s3_credentials(s3):
            started = time.monotonic()
            spark = session.build_session(
                f"local[{args.parallelism}]", app_name="w1-bench", parallelism=args.parallelism
            )
            log(f"SparkSession ready in {time.monotonic() - started:.1f}s")
            bench = Bench(args, s3, spark, work)
            bench.loads.append(w1_report.loadavg())
            try:
                warmup = bench.run_ours("warmup", min(args.events, 2_000_000), NO_CHECKPOINTS)
                w1 = series(bench, "w1", args.events)
                sustained = series(bench, "sustained", args.sustained_events)
                recovery = None
                if not args.skip_recovery:
                    run = bench.run_ours("recovery", recovery_events, 1.0, kill=True)
                    recovery = {**run.pop("recovery"), "run": run}
                ss = None if args.skip_spark_ss else spark_ss(bench, args)
            finally:
                spark.stop()
            report = w1_report.summarize(args, bench, w1, sustained, recovery, ss)
            report["setup"]["warmup_run_not_counted"] = warmup
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=2))


def series(bench: Bench, name: str, events: int) -> dict[str, list[dict[str, Any]]] | None:
    """Runs without and with checkpoints, ``--repeats`` of each, in ABBA order."""
    if events <= 0:
        return None
    out: dict[str, list[dict[str, Any]]] = {"without": [], "with": []}
    for i in range(bench.args.repeats):
        for kind in harness.interleaved(["without", "with"], i):  # ABBA: no drift bias
            if kind == "without":
                out[kind].append(bench.run_ours(f"{name}-nocp-{i}", events, NO_CHECKPOINTS))
            else:
                out[kind].append(bench.run_ours(f"{name}-cp-{i}", events, 1.0))
    return out


def spark_ss(bench: Bench, args: argparse.Namespace) -> dict[str, Any]:
    parquet = bench.work / "parquet"
    started = time.monotonic()
    files = data.write_generated_parquet(
        bench.source(args.events), parquet, rows_per_file=1_000_000
    )
    log(f"wrote {files} Parquet files in {time.monotonic() - started:.1f}s")
    bench.spark.conf.set("spark.sql.shuffle.partitions", str(args.parallelism))
    runs = []
    for i in range(args.repeats + 1):  # the first run warms the JVM up and is not counted
        run = w1_measure.run_spark_ss(
            bench.spark, parquet, bench.work / f"ss-checkpoint-{i}", args.events
        )
        bench.loads.append(run["loadavg_after"])
        log(f"spark-ss-{i}: {json.dumps({k: v for k, v in run.items() if 'loadavg' not in k})}")
        runs.append(run)
    warmup, runs = runs[0], runs[1:]
    cpu = statistics.median(r["cpu_seconds"]["jvm"] + r["cpu_seconds"]["driver"] for r in runs)
    return {
        "end_to_end_events_per_second": w1_report.median_of(runs, "end_to_end_events_per_second"),
        "processing_events_per_second": w1_report.median_of(runs, "processing_events_per_second"),
        "cpu_seconds_per_million_events": round(cpu / args.events * 1e6, 4),
        "config": {
            "master": f"local[{args.parallelism}]",
            "spark.sql.shuffle.partitions": args.parallelism,
            "source": f"readStream.parquet, {files} files of <= 1,000,000 rows, schema key LONG, value LONG",
            "query": 'groupBy("key").sum("value"), outputMode update, format noop',
            "checkpointLocation": "local disk (a fresh directory per run)",
            "trigger": "availableNow",
            "state_store": bench.spark.conf.get(
                "spark.sql.streaming.stateStore.providerClass",
                "default (HDFSBackedStateStoreProvider)",
            ),
            "same_events_as_ours": True,
        },
        "runs": runs,
        "warmup_run_not_counted": warmup,
    }


if __name__ == "__main__":
    main()
