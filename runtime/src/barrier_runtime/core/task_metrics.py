"""Counters of an attempt's subtasks: records in and out per step, rejects, back-pressure,
and per sink step the arrival and commit latency of records stamped with their creation time.

The task engine counts them per subtask
(:func:`barrier_runtime.task.metrics.subtask_metrics`), hosts sum them per
attempt and the driver adds the attempts up for the control API and
``/metrics``. They live on the ground floor because both the task engine and
the driver speak them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from barrier_runtime.core import latency


@dataclass
class AttemptMetrics:
    """Counters of one attempt so far (records per step, back-pressure seconds per task)."""

    records_in: dict[str, int] = field(default_factory=dict)
    records_out: dict[str, int] = field(default_factory=dict)
    backpressure_seconds: dict[str, float] = field(default_factory=dict)
    records_rejected: dict[str, int] = field(default_factory=dict)
    """Per step (or source) with ``on_error`` skip or dead-letter: records passed over."""
    arrival_latency: dict[str, latency.LatencyHistogram] = field(default_factory=dict)
    """Per sink step: write time - creation time of stamped records."""
    commit_latency: dict[str, latency.LatencyHistogram] = field(default_factory=dict)
    """Per sink step: checkpoint commit time - creation time of stamped records."""
    watermarks: dict[str, int] = field(default_factory=dict)
    """Per step: the smallest watermark (ms) its subtasks forwarded (those that forwarded one)."""
    late_dropped: dict[str, int] = field(default_factory=dict)
    """Per window or join step: late records dropped (no side output, or a join)."""
    source_lag: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per source step and partition (of the sources that can tell): records behind."""

    def add(self, other: AttemptMetrics) -> None:
        """Sum ``other`` in (the same attempt's other subtasks, or another attempt);
        watermarks take the minimum per step."""
        for mine, theirs in (
            (self.records_in, other.records_in),
            (self.records_out, other.records_out),
            (self.records_rejected, other.records_rejected),
            (self.late_dropped, other.late_dropped),
        ):
            for step, n in theirs.items():
                mine[step] = mine.get(step, 0) + n
        for task, s in other.backpressure_seconds.items():
            self.backpressure_seconds[task] = self.backpressure_seconds.get(task, 0.0) + s
        latency.merge_into(self.arrival_latency, other.arrival_latency)
        latency.merge_into(self.commit_latency, other.commit_latency)
        for step, wm in other.watermarks.items():
            self.watermarks[step] = min(wm, self.watermarks.get(step, wm))
        for step, lags in other.source_lag.items():  # each partition has one reader
            self.source_lag[step] = {**self.source_lag.get(step, {}), **lags}

    def copy(self) -> AttemptMetrics:
        return AttemptMetrics(
            dict(self.records_in),
            dict(self.records_out),
            dict(self.backpressure_seconds),
            dict(self.records_rejected),
            dict(self.arrival_latency),
            dict(self.commit_latency),
            dict(self.watermarks),
            dict(self.late_dropped),
            {step: dict(lags) for step, lags in self.source_lag.items()},
        )
