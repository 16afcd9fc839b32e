"""The live view of a running job: events as they happen and a status line every few seconds.

:class:`ProgressView` polls a :class:`~barrier_runtime.driver.job_driver.JobDriver`
from a daemon thread and reports through an :class:`Output`:

* events — checkpoint completed/aborted, worker failure, recovery (which
  checkpoint the new attempt restored);
* a status line every ``status_every`` seconds — source throughput, back-pressure,
  the last completed checkpoint (id, age, duration, size) and restarts.

Text mode prints ``[  12.3s] …`` lines (the ``cjob demo`` style); JSON mode
prints one JSON object per line with an ``event`` field, for machines.
"""

from __future__ import annotations

import datetime
import json
import sys
import threading
import time
from typing import Any, TextIO

from barrier_runtime.api import steps, watermarks
from barrier_runtime.checkpoint import stats as stats_mod
from barrier_runtime.control import job as job_mod
from barrier_runtime.core import latency
from barrier_runtime.driver import job_driver


class Output:
    """Where progress goes: human lines or JSON lines."""

    def __init__(self, *, json_lines: bool, stream: TextIO | None = None) -> None:
        self.json_lines = json_lines
        self._stream = stream or sys.stdout
        self._started = time.monotonic()
        self._lock = threading.Lock()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def say(self, text: str, event: str = "info", **fields: Any) -> None:
        with self._lock:
            if self.json_lines:
                record = {"event": event, "t": round(self.elapsed, 3), **fields}
                if event == "info":
                    record["message"] = text
                print(json.dumps(record, default=str), file=self._stream, flush=True)
            else:
                print(f"[{self.elapsed:6.1f}s] {text}", file=self._stream, flush=True)


class ProgressView:
    """Reports what ``job`` does until :meth:`stop`."""

    def __init__(self, job: job_driver.JobDriver, out: Output, *, status_every: float = 5.0):
        self._job = job
        self._out = out
        self._status_every = status_every
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="cjob-progress")
        self._seen: set[int] = set()
        self._failures = 0
        self._attempts = 0
        self._last_status = time.monotonic()
        self._last_records = 0
        self._last_backpressure = 0.0
        self._last_arrival = latency.LatencyHistogram()
        self._last_commit = latency.LatencyHistogram()

    def start(self) -> ProgressView:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._done.set()
        self._thread.join()
        self._poll()

    def __enter__(self) -> ProgressView:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _loop(self) -> None:
        while not self._done.wait(0.2):
            self._poll()
            if time.monotonic() - self._last_status >= self._status_every:
                self._status()

    def _poll(self) -> None:
        stats = self._job.coordinator.stats()
        for entry in sorted(stats.history, key=lambda e: e.checkpoint_id):
            if entry.checkpoint_id in self._seen or entry.end_time is None:
                continue
            self._seen.add(entry.checkpoint_id)
            self._checkpoint_event(entry)
        result = self._job.result
        while self._failures < len(result.failures):
            failure = result.failures[self._failures]
            self._out.say(f"FAILURE {failure}", "failure", message=failure)
            self._failures += 1
        while self._attempts < len(result.restored_from):
            restored = result.restored_from[self._attempts]
            if self._attempts > 0:
                origin = "empty state" if restored is None else f"checkpoint {restored}"
                self._out.say(
                    f"restarting: attempt {self._attempts} restores {origin}",
                    "restart",
                    attempt=self._attempts,
                    restored_from=restored,
                )
            elif restored is not None:
                self._out.say(f"restoring checkpoint {restored}", "restore", restored_from=restored)
            self._attempts += 1

    def _checkpoint_event(self, entry: stats_mod.CheckpointStatsEntry) -> None:
        duration_ms = (entry.duration or 0.0) * 1000
        if entry.status is stats_mod.CheckpointStatus.COMPLETED:
            self._out.say(
                f"{entry.kind.value} {entry.checkpoint_id} completed in {duration_ms:.0f} ms, "
                f"{entry.state_size / 1024:.0f} KiB",
                "checkpoint",
                id=entry.checkpoint_id,
                kind=entry.kind.value,
                status="completed",
                duration_ms=round(duration_ms, 1),
                size=entry.state_size,
            )
        else:
            reason = entry.failure_reason.value if entry.failure_reason else "unknown"
            self._out.say(
                f"{entry.kind.value} {entry.checkpoint_id} aborted ({reason})",
                "checkpoint",
                id=entry.checkpoint_id,
                kind=entry.kind.value,
                status="failed",
                reason=reason,
            )

    def _status(self) -> None:
        now = time.monotonic()
        span = max(now - self._last_status, 1e-6)
        metrics = self._job.runtime_metrics()
        info = self._job.info()
        sources = [s.step_id for s in self._job.plan.flow.steps if isinstance(s, steps.SourceStep)]
        records = sum(metrics.records_out.get(s, 0) for s in sources)
        backpressure = sum(metrics.backpressure_seconds.values())
        rate = (records - self._last_records) / span
        tasks = max(len(metrics.backpressure_seconds), 1)
        pressured = min(1.0, (backpressure - self._last_backpressure) / (span * tasks))
        self._last_status, self._last_records = now, records
        self._last_backpressure = backpressure
        latest = self._job.coordinator.stats().latest_completed
        rejected = sum(metrics.records_rejected.values())
        last_id = info.restored_from if latest is None else latest.checkpoint_id
        if latest is None or latest.end_time is None:
            last = (
                "no checkpoint yet"
                if info.restored_from is None
                else f"restored checkpoint {info.restored_from}"
            )
        else:
            age = max(0.0, self._job.clock.now() - latest.end_time)
            last = (
                f"checkpoint {latest.checkpoint_id} {age:.1f}s ago "
                f"({(latest.duration or 0) * 1000:.0f} ms, {latest.state_size / 1024:.0f} KiB)"
            )
        arrival = latency.combined(metrics.arrival_latency.values())
        commit = latency.combined(metrics.commit_latency.values())
        lat_text, lat_fields = _latency_window(
            arrival.since(self._last_arrival), commit.since(self._last_commit)
        )
        self._last_arrival, self._last_commit = arrival, commit
        time_text, time_fields = _event_time(metrics, time.time())
        self._out.say(
            f"{info.state.value.lower()} | {rate:,.0f} records/s | back-pressure "
            f"{pressured:.0%} | {last} | restarts {info.restarts}"
            + (f" | rejected {rejected:,}" if rejected else "")
            + lat_text
            + time_text,
            "status",
            state=info.state.value,
            records_per_s=round(rate, 1),
            records=records,
            backpressure=round(pressured, 3),
            restarts=info.restarts,
            last_checkpoint=last_id,
            rejected=rejected,
            **lat_fields,
            **time_fields,
        )


def _latency_window(
    arrival: latency.LatencyHistogram, commit: latency.LatencyHistogram
) -> tuple[str, dict[str, float]]:
    """The status line's latency part for one window (bucket upper bounds, so "≤")."""
    if not arrival.count:
        return "", {}
    fields = {
        "latency_p50_ms": (arrival.quantile(0.5) or 0.0) * 1000,
        "latency_p99_ms": (arrival.quantile(0.99) or 0.0) * 1000,
    }
    text = f" | latency p50 ≤{fields['latency_p50_ms']:g} ms p99 ≤{fields['latency_p99_ms']:g} ms"
    if commit.count:
        fields["commit_latency_p99_ms"] = (commit.quantile(0.99) or 0.0) * 1000
        text += f", committed p99 ≤{fields['commit_latency_p99_ms']:g} ms"
    return text, fields


def _event_time(metrics: job_mod.RuntimeMetrics, now: float) -> tuple[str, dict[str, Any]]:
    """The status line's event-time part: the job's lowest watermark, its lag, late drops.

    The lowest watermark over the steps that have one (finished and not yet
    started steps aside) is how far the whole job has got in event time; its
    lag behind the wall clock is what a dashboard would alert on.
    """
    known = [
        wm
        for wm in metrics.watermarks.values()
        if watermarks.MIN_WATERMARK < wm < watermarks.MAX_WATERMARK
    ]
    late = sum(metrics.late_dropped.values())
    if not known:
        return "", {}
    lowest = min(known)
    lag = now - lowest / 1000
    stamp = datetime.datetime.fromtimestamp(lowest / 1000, datetime.UTC)
    fields: dict[str, Any] = {"watermark_ms": lowest, "watermark_lag_s": round(lag, 3)}
    text = f" | watermark {stamp:%Y-%m-%d %H:%M:%S}Z (lag {_duration(lag)})"
    if late:
        fields["late_dropped"] = late
        text += f", late dropped {late:,}"
    return text, fields


def _duration(seconds: float) -> str:
    if abs(seconds) < 120:
        return f"{seconds:.1f}s"
    if abs(seconds) < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"
