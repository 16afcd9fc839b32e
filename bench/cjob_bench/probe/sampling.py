"""Sampling a running Spark job from its driver: every worker's RSS and the job's counters."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cjob_bench.probe import workload

if TYPE_CHECKING:  # the pipeline file imports this package on every worker: keep it light
    from barrier_runtime.core import metadata
    from barrier_runtime.driver import job_driver
    from barrier_runtime.spark import driver as driver_mod


def read_rss(pid: int) -> int | None:
    """Resident set size of process ``pid`` in bytes (``None`` if it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return None


@dataclass(frozen=True, slots=True)
class Sample:
    """One look at the job: seconds since start, attempt, readiness, RSS and counters."""

    t: float
    wall: float
    """``time.time()``, the clock checkpoint metadata uses."""
    attempt: int
    ready: bool
    rss: dict[int, int]
    """Bytes, by worker index."""
    source_out: int
    sink_in: int
    source_backpressure: float


@dataclass
class ProbeResult:
    result: job_driver.JobResult
    samples: list[Sample]
    elapsed: float
    checkpoints: list[metadata.CheckpointMetadata] = field(default_factory=list)
    """Every completed checkpoint in the store (the job retains them all)."""
    failed_checkpoints: int = 0


class JobProbe:
    """Runs ``job`` (a SparkDriver) to the end, sampling it every ``interval`` seconds."""

    def __init__(self, job: driver_mod.SparkDriver, interval: float = 0.25) -> None:
        self._job = job
        self._interval = interval
        self._done = threading.Event()
        self._started = 0.0
        self.samples: list[Sample] = []

    def run(self) -> ProbeResult:
        self._started = time.monotonic()
        sampler = threading.Thread(target=self._sample_loop, name="cjob-probe", daemon=True)
        sampler.start()
        try:
            result = self._job.run()
        finally:
            self._done.set()
            sampler.join(10)
        return ProbeResult(
            result=result,
            samples=list(self.samples),
            elapsed=time.monotonic() - self._started,
            checkpoints=self._job.store.list_completed(),
            failed_checkpoints=self._job.job.checkpoint_stats().counts.failed,
        )

    def _sample_loop(self) -> None:
        while not self._done.wait(self._interval):
            current = self._job.runner.current
            if current is None:
                continue
            rss = {w: r for w, pid in current.worker_pids.items() if (r := read_rss(pid))}
            metrics = self._job.job.runtime_metrics()
            self.samples.append(
                Sample(
                    t=time.monotonic() - self._started,
                    wall=time.time(),
                    attempt=current.number,
                    ready=current.ready,
                    rss=rss,
                    source_out=metrics.records_out.get(workload.SOURCE_STEP, 0),
                    sink_in=metrics.records_in.get(workload.SINK_STEP, 0),
                    source_backpressure=metrics.backpressure_seconds.get(workload.SOURCE_TASK, 0.0),
                )
            )
