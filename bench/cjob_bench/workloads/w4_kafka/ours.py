"""Our side: the W4-on-Kafka pipeline as a job on a Spark barrier stage, started and stopped live.

:class:`OursRunner` holds one warm SparkSession (``local[P]``) and the embedded S3 server the
checkpoints go to. :meth:`OursRunner.start` submits :mod:`.pipeline` with exactly-once
checkpoints every ``interval`` seconds (aligned or unaligned) in a background thread and
returns once its subtasks run; the sink stages transactions larger than its inline limit
(10,000 records a writer a checkpoint, 5,000 events/s per subtask) in the same S3 server; :meth:`RunningJob.stop` stops it with a savepoint and returns its figures
(checkpoint durations, the runtime's own latency metrics).
"""

from __future__ import annotations

import json
import pathlib
import shutil
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from barrier_runtime.core import latency
from barrier_runtime.driver.restart import Backoff
from barrier_runtime.spark import driver
from barrier_runtime.storage.embedded import EmbeddedS3Server
from cjob_bench.peers import ours as peer

PIPELINE = str(pathlib.Path(__file__).with_name("pipeline.py"))
BUCKET = peer.BUCKET
MODES = ("aligned", "unaligned")


@dataclass
class RunningJob:
    """A started job; :meth:`stop` ends it and returns what it measured about itself."""

    job: driver.SparkDriver
    thread: threading.Thread
    mode: str
    probe_dir: pathlib.Path | None = None
    errors: list[BaseException] = field(default_factory=list)

    def stop(self, timeout: float = 120.0) -> dict[str, Any]:
        if self.errors:
            raise RuntimeError(f"our job failed: {self.errors[0]}") from self.errors[0]
        self.job.job.stop_with_savepoint(timeout)
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise TimeoutError(f"our job did not stop within {timeout:g}s")
        if self.errors:
            raise RuntimeError(f"our job failed: {self.errors[0]}") from self.errors[0]
        stats = self.job.job.checkpoint_stats()
        metrics = self.job.job.runtime_metrics()
        probe = {} if self.probe_dir is None else {"sink_commits": _commits(self.probe_dir)}
        return {
            **probe,
            "checkpoints_completed": stats.counts.completed,
            "checkpoints_failed": stats.counts.failed,
            "checkpoint_ms": _spread_ms([e.duration for e in stats.history]),
            "alignment_ms": _spread_ms([e.alignment_duration for e in stats.history]),
            "runtime_latency_bucket_bounds_ms": {
                kind: {
                    q: _ms(latency.combined(per_step.values()).quantile(v))
                    for q, v in (("p50", 0.5), ("p99", 0.99))
                }
                for kind, per_step in (
                    ("arrival", metrics.arrival_latency),
                    ("commit", metrics.commit_latency),
                )
            },
        }


class OursRunner:
    """Starts our job on one warm SparkSession, checkpoints to the embedded S3 server."""

    def __init__(
        self, spark: Any, s3: EmbeddedS3Server, *, parallelism: int, interval: float
    ) -> None:
        self.spark, self.s3 = spark, s3
        self.parallelism, self.interval = parallelism, interval

    def start(
        self,
        mode: str,
        bootstrap: str,
        in_topic: str,
        out_topic: str,
        *,
        probe: bool = False,
        timeout: float = 120.0,
    ) -> RunningJob:
        """Submit the job; ``probe`` stamps ``t_map`` on every record (profile runs)."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose from {MODES}")
        run_id = uuid.uuid4().hex[:8]
        args = ["--bootstrap", bootstrap, "--in-topic", in_topic, "--out-topic", out_topic]
        args += ["--txn-prefix", f"w4k-{run_id}"]
        args += ["--staging-url", self.s3.url(BUCKET, f"w4kafka-staging/{run_id}")]
        probe_dir = pathlib.Path(tempfile.mkdtemp(prefix="w4k-probe-")) if probe else None
        if probe_dir is not None:
            args += ["--probe-dir", str(probe_dir)]
        spec = peer.job_spec(
            PIPELINE,
            args,
            s3=self.s3,
            prefix=f"w4kafka/{mode}-{run_id}",
            parallelism=self.parallelism,
            checkpoint=peer.checkpoints(self.interval, timeout=60.0, unaligned=mode == "unaligned"),
            restart=peer.no_restarts(Backoff(initial=0.2)),
        )
        job = driver.SparkDriver(spec, session=self.spark)
        running = RunningJob(job, threading.Thread(daemon=True), mode, probe_dir)

        def run() -> None:
            try:
                job.run()
            except BaseException as exc:  # reported by stop()
                running.errors.append(exc)

        running.thread = threading.Thread(target=run, name=f"w4kafka-ours-{mode}", daemon=True)
        running.thread.start()
        if not job.job.wait_running(timeout):
            raise TimeoutError(f"our job was not running within {timeout:g}s: {running.errors}")
        return running


def _commits(probe_dir: pathlib.Path) -> dict[str, Any]:
    """The sink's commit durations logged by a probe run (then its directory goes)."""
    lines = [
        json.loads(line)
        for path in probe_dir.glob("commits-*.jsonl")
        for line in path.read_text().splitlines()
    ]
    shutil.rmtree(probe_dir, ignore_errors=True)
    return {
        "commits": len(lines),
        "commit_ms": _spread_ms([c["end"] - c["start"] for c in lines]),
        "records_per_commit_median": (
            float(np.median([c["records"] for c in lines])) if lines else None
        ),
    }


def _spread_ms(values: list[float | None]) -> dict[str, float] | None:
    known = [v for v in values if v is not None]
    if not known:
        return None
    return {
        "median": round(float(np.median(known)) * 1000, 1),
        "p90": round(float(np.quantile(known, 0.9)) * 1000, 1),
        "max": round(max(known) * 1000, 1),
    }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 3)
