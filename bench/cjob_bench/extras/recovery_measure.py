"""W1's measuring tools: CPU time of a process, the run monitor, and the Spark SS peer."""

from __future__ import annotations

import os
import pathlib
import resource
import signal
import threading
import time
from typing import Any

from barrier_runtime.spark import driver
from cjob_bench.extras import recovery_report as w1_report
from cjob_bench.harness.machine import cpu_seconds, jvm_pid
from cjob_bench.peers import spark as spark_runner


class CpuMeter:
    """CPU seconds used between :meth:`start` and :meth:`stop` by the driver, the JVM, S3."""

    def __init__(self, s3_pid: int | None) -> None:
        self.pids = {"jvm": jvm_pid(), "s3_server": s3_pid}
        self._start: dict[str, float | None] = {}

    def _now(self) -> dict[str, float | None]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        now: dict[str, float | None] = {"driver": usage.ru_utime + usage.ru_stime}
        now |= {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        return now

    def start(self) -> None:
        self._start = self._now()

    def stop(self) -> dict[str, float | None]:
        end = self._now()
        return {
            name: None
            if end[name] is None or self._start[name] is None
            else round(end[name] - self._start[name], 3)  # type: ignore[operator]
            for name in end
        }


class Monitor:
    """Polls the driver: checkpoint durations; optionally kills a worker and times the recovery."""

    def __init__(self, job: driver.SparkDriver, *, kill_after_first_checkpoint: bool) -> None:
        self.job = job
        self.kill = kill_after_first_checkpoint
        self.durations: dict[int, float] = {}
        self.sizes: dict[int, int] = {}
        self.alignments: dict[int, float] = {}
        self.worker_cpu: dict[int, float] = {}
        """Latest CPU seconds of every worker process seen (sampled every 10 ms)."""
        self.killed_at: float | None = None
        self.killed_pid: int | None = None
        self.killed_pids: set[int] = set()
        self.completed_at_kill: int | None = None
        self.failure_seen_at: float | None = None
        self.new_attempt_at: float | None = None
        self.new_ready_at: float | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="w1-monitor")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        self._thread.join(10)
        self._collect()

    def _collect(self) -> None:
        for entry in self.job.job.checkpoint_stats().history:
            if entry.status.value == "completed" and entry.duration is not None:
                self.durations[entry.checkpoint_id] = entry.duration
                self.sizes[entry.checkpoint_id] = entry.state_size
                self.alignments[entry.checkpoint_id] = entry.alignment_duration

    def _sample_workers(self) -> None:
        current = self.job.runner.current
        for pid in (current.worker_pids if current is not None else {}).values():
            used = cpu_seconds(pid)
            if used is not None:
                self.worker_cpu[pid] = used

    def _loop(self) -> None:
        first_attempt = None
        while not self._done.wait(0.01):
            self._collect()
            self._sample_workers()
            if not self.kill:
                continue
            current = self.job.runner.current
            if current is None:
                continue
            if self.killed_at is None:
                pids = current.worker_pids
                if self.durations and current.ready and len(pids) == self.job.spec.parallelism:
                    if self._done.wait(0.3):
                        return
                    first_attempt = current
                    self.killed_pids = set(pids.values())
                    self.killed_pid = pids[self.job.spec.parallelism - 1]
                    self.completed_at_kill = max(self.durations)
                    os.kill(self.killed_pid, signal.SIGKILL)
                    self.killed_at = time.time()
                continue
            now = time.time()
            if (
                self.failure_seen_at is None
                and first_attempt is not None
                and first_attempt.failure is not None
            ):
                self.failure_seen_at = now
            if self.new_attempt_at is None and current is not first_attempt:
                self.new_attempt_at = now
            if self.new_ready_at is None and current is not first_attempt and current.ready:
                self.new_ready_at = now


# -- Spark Structured Streaming -----------------------------------------------------------------


def run_spark_ss(
    spark: Any, parquet_dir: pathlib.Path, checkpoint_dir: pathlib.Path, events: int
) -> dict[str, Any]:
    load_before = w1_report.loadavg()
    meter = CpuMeter(None)
    meter.start()
    started = time.time()
    writer = (
        spark.readStream.schema("key LONG, value LONG")
        .parquet(str(parquet_dir))
        .groupBy("key")
        .sum("value")
        .writeStream.outputMode("update")
        .format("noop")
        .option("checkpointLocation", str(checkpoint_dir))
    )
    query = spark_runner.trigger(writer, "available-now").start()
    query.awaitTermination()
    ended = time.time()
    cpu = meter.stop()
    cpu.pop("s3_server")
    progress = spark_runner.progress(query)
    rows = sum(int(p.get("numInputRows", 0)) for p in progress)
    if rows != events:
        raise RuntimeError(f"Spark SS read {rows} rows, expected {events}")
    trigger = spark_runner.trigger_seconds(progress)
    return {
        "wall_seconds": round(ended - started, 3),
        "end_to_end_events_per_second": round(events / (ended - started)),
        "micro_batches": len(spark_runner.with_input(progress)),
        "trigger_execution_seconds": round(trigger, 3),
        "processing_events_per_second": round(events / trigger) if trigger else None,
        "cpu_seconds": cpu,
        "loadavg_before": load_before,
        "loadavg_after": w1_report.loadavg(),
    }
