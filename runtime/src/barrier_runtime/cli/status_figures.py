"""The figures of ``cjob run``'s status line that need a definition: back-pressure and event time.

Back-pressure is defined as Flink defines ``backPressuredTimeMsPerSecond``: for each
task (a chain of steps, run as P parallel subtasks), the share of the interval its
subtasks spent waiting for downstream capacity, averaged over its P subtasks; the
job's figure is that of its most back-pressured task (0 to 1). A job whose sources
keep up reads close to 0; a bottleneck makes the tasks upstream of it read close to 1.

Event time is shown as the job's watermark (the lowest one of its steps) and how fast
it advances (event-time seconds per wall-clock second: 1 for a live source keeping
up, 3600 for a replay going through an hour a second). Its lag behind the wall clock
is shown only while the watermark is within :data:`LIVE_WINDOW` of the wall clock,
i.e. the source is live; a replay of last year's events shows no lag (it would read
as millions of seconds and say nothing).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from barrier_runtime.api import watermarks
from barrier_runtime.control import job as job_mod

LIVE_WINDOW = 24 * 3600.0
"""A watermark less than this far behind the wall clock (seconds) counts as live."""


def backpressure(
    before: Mapping[str, float], after: Mapping[str, float], span: float, parallelism: int
) -> float:
    """The most back-pressured task's share of ``span``, averaged over its subtasks.

    ``before`` and ``after`` are the back-pressured seconds per task, summed over its
    subtasks, at the start and end of the interval.

    >>> backpressure({"src": 1.0}, {"src": 2.5, "sink": 0.0}, span=5.0, parallelism=3)
    0.1
    >>> backpressure({}, {"src": 30.0}, span=5.0, parallelism=3)  # capped: a restart's backlog
    1.0
    >>> backpressure({"src": 9.0}, {"src": 2.0}, span=5.0, parallelism=3)  # a killed worker's
    0.0
    """
    if span <= 0 or parallelism <= 0:
        return 0.0
    shares = [
        max(0.0, seconds - before.get(task, 0.0)) / (span * parallelism)
        for task, seconds in after.items()
    ]
    return round(min(1.0, max(shares, default=0.0)), 3)


@dataclass(frozen=True, slots=True)
class EventTimeSample:
    """The job's watermark (ms) seen at wall-clock time ``at`` (epoch seconds)."""

    at: float
    watermark_ms: int


def lowest_watermark(metrics: job_mod.RuntimeMetrics) -> int | None:
    """The lowest watermark over the steps that have one (finished and unstarted aside)."""
    known = [
        wm
        for wm in metrics.watermarks.values()
        if watermarks.MIN_WATERMARK < wm < watermarks.MAX_WATERMARK
    ]
    return min(known) if known else None


def event_time(
    metrics: job_mod.RuntimeMetrics, now: float, previous: EventTimeSample | None = None
) -> tuple[str, dict[str, Any]]:
    """The status line's event-time part: watermark, its rate, its lag when live, late drops."""
    lowest = lowest_watermark(metrics)
    if lowest is None:
        return "", {}
    stamp = datetime.datetime.fromtimestamp(lowest / 1000, datetime.UTC)
    fields: dict[str, Any] = {
        "watermark": f"{stamp:%Y-%m-%dT%H:%M:%S.%f}"[:-3] + "Z",
        "watermark_ms": lowest,
    }
    notes: list[str] = []
    lag = now - lowest / 1000
    if 0 <= lag < LIVE_WINDOW:
        fields["watermark_lag_s"] = round(lag, 3)
        notes.append(f"lag {_duration(lag)}")
    if previous is not None and now > previous.at:
        rate = (lowest - previous.watermark_ms) / 1000 / (now - previous.at)
        fields["event_time_rate"] = round(rate, 3)
        notes.append(f"+{_duration(max(rate, 0.0))}/s")
    text = f" | watermark {stamp:%Y-%m-%d %H:%M:%S}Z" + (f" ({', '.join(notes)})" if notes else "")
    late = sum(metrics.late_dropped.values())
    if late:
        fields["late_dropped"] = late
        text += f", late dropped {late:,}"
    return text, fields


def _duration(seconds: float) -> str:
    if abs(seconds) < 120:
        return f"{seconds:.1f}s"
    if abs(seconds) < 7200:
        return f"{seconds / 60:.0f}m"
    if abs(seconds) < 3 * 86400:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.0f}d"
