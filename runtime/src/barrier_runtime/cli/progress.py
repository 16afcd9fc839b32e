"""The live view of a running job: events as they happen and a status line every few seconds.

:class:`ProgressView` polls a :class:`~barrier_runtime.driver.job_driver.JobDriver`
from a daemon thread and reports through an :class:`Output`:

* events — checkpoint completed/aborted, worker failure, recovery (which
  checkpoint the new attempt restored);
* a status line every ``status_every`` seconds — source throughput, back-pressure
  and event time (defined in :mod:`~barrier_runtime.cli.status_figures`), the last
  completed checkpoint (id, age, duration, size) and restarts; between a failure and
  the next attempt running, which attempt restarts and what it restores.

Text mode prints ``[  12.3s] …`` lines (the ``cjob demo`` style); JSON mode
prints one JSON object per line with an ``event`` field, for machines.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any, Self, TextIO

from barrier_runtime.api import steps
from barrier_runtime.checkpoint import stats as stats_mod
from barrier_runtime.cli import status_figures
from barrier_runtime.control import job as job_mod
from barrier_runtime.core import latency, service
from barrier_runtime.driver import job_driver
from barrier_runtime.driver import restore as restore_mod


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


def announce_checkpoint_ids(out: Output, ids: restore_mod.CheckpointIds) -> None:
    """Where this driver's checkpoint ids start, and which ids no event will ever name.

    A ``checkpoint_ids`` event always; a line in text mode when ids continue a store's
    history (the first id is above 1).
    """
    if ids.skipped:
        shown = _id_ranges(ids.skipped)
        verb = "was" if len(ids.skipped) == 1 else "were"
        skipped = f"; {shown} {verb} reserved by an earlier driver and never completed: skipped"
    else:
        skipped = ""
    after = "" if ids.latest_completed is None else f" after checkpoint {ids.latest_completed}"
    text = f"checkpoint ids continue at {ids.first_id}{after}{skipped}"
    if out.json_lines or ids.first_id > 1:
        out.say(
            text,
            "checkpoint_ids",
            first_id=ids.first_id,
            latest_completed=ids.latest_completed,
            skipped=list(ids.skipped),
        )


def _id_ranges(ids: tuple[int, ...]) -> str:
    """``14`` or ``14-16`` (the skipped ids are consecutive)."""
    return str(ids[0]) if len(ids) == 1 else f"{ids[0]}-{ids[-1]}"


class ProgressView(service.Service):
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
        self._last_backpressure: dict[str, float] = {}
        self._last_event_time: status_figures.EventTimeSample | None = None
        self._last_arrival = latency.LatencyHistogram()
        self._last_commit = latency.LatencyHistogram()

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._done.set()
        self._thread.join()
        self._poll()

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
        rate = (records - self._last_records) / span
        pressured = status_figures.backpressure(
            self._last_backpressure, metrics.backpressure_seconds, span, self._job.plan.parallelism
        )
        self._last_status, self._last_records = now, records
        self._last_backpressure = dict(metrics.backpressure_seconds)
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
        wall = time.time()
        time_text, time_fields = status_figures.event_time(metrics, wall, self._last_event_time)
        lowest = status_figures.lowest_watermark(metrics)
        if lowest is not None:
            self._last_event_time = status_figures.EventTimeSample(wall, lowest)
        restart_text, restart_fields = self._restarting(info)
        self._out.say(
            (restart_text or f"{info.state.value.lower()} | {rate:,.0f} records/s")
            + f" | back-pressure {pressured:.0%} | {last} | restarts {info.restarts}"
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
            **restart_fields,
            **lat_fields,
            **time_fields,
        )

    def _restarting(self, info: job_mod.JobInfo) -> tuple[str, dict[str, Any]]:
        """Until an attempt's workers all run: which attempt, restoring what (the same in the
        JSON fields ``attempt`` and ``restoring``)."""
        if info.state is job_mod.JobState.RUNNING and not info.ready:
            origin = (
                "empty state" if info.restored_from is None else f"checkpoint {info.restored_from}"
            )
            return f"starting: attempt {info.attempt} restores {origin}", {
                "attempt": info.attempt,
                "restoring": info.restored_from,
            }
        if info.state is not job_mod.JobState.RESTARTING:
            return "", {}
        result = self._job.result
        if len(result.failures) >= result.attempts:  # backing off: the next one is not chosen
            latest = self._job.coordinator.stats().latest_completed
            restores = info.restored_from if latest is None else latest.checkpoint_id
            what = "the latest completed checkpoint" + (
                f" ({restores})" if restores is not None else ""
            )
            attempt = result.attempts
        else:
            restores = info.restored_from
            what = "empty state" if restores is None else f"checkpoint {restores}"
            attempt = info.attempt
        return f"restarting: attempt {attempt} restores {what}", {
            "attempt": attempt,
            "restoring": restores,
        }


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
