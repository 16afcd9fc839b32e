"""Counters that never go down, over a job whose own numbers can dip or be bounded.

The job's own numbers can dip (a restart swaps the live subtasks out before
their counts are folded into the totals) or be bounded (the checkpoint history
keeps the newest finished entries only), so a :class:`CheckpointTracker`
remembers which checkpoint ids it has counted and the highest value each
counter has shown. A checkpoint that finished and fell out of the history
between two scrapes is still counted (from the job's totals): as failed with
reason ``unknown``, or as completed without a duration observation.

Not thread-safe: :class:`~.metrics.JobMetrics` calls it under its lock. No
Prometheus types here: :mod:`.metrics` renders.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from barrier_runtime.checkpoint import stats
from barrier_runtime.core import latency

DURATION_BUCKETS: tuple[float, ...] = (
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
)
"""Upper bounds (seconds) of ``cjob_checkpoint_duration_seconds``; ``+Inf`` is implied."""

UNKNOWN_REASON = "unknown"


class Histogram:
    """A cumulative histogram fed one observation at a time (not thread-safe)."""

    def __init__(self, buckets: Sequence[float] = DURATION_BUCKETS) -> None:
        bounds = sorted(b for b in buckets if not math.isinf(b))
        if not bounds:
            raise ValueError("a histogram needs at least one finite bucket")
        self.bounds = tuple(bounds)
        self._counts = [0] * (len(self.bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self._counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value

    def cumulative(self) -> list[tuple[str, float]]:
        """``(le, count)`` pairs as Prometheus wants them, ending with ``+Inf``."""
        les = [*(_le(b) for b in self.bounds), "+Inf"]
        running, out = 0, []
        for le, n in zip(les, self._counts, strict=True):
            running += n
            out.append((le, float(running)))
        return out


def _le(bound: float) -> str:
    return repr(float(bound))


@dataclass(frozen=True, slots=True)
class CheckpointTotals:
    """What one scrape reports about checkpoints; every count is monotonic."""

    triggered: int
    completed: int
    failed_by_reason: Mapping[str, int]
    rejected: int
    restarts: int


class CheckpointTracker:
    """Turns bounded, possibly dipping job statistics into monotonic counters."""

    def __init__(self, buckets: Sequence[float] = DURATION_BUCKETS) -> None:
        self.durations = Histogram(buckets)
        self._seen: set[int] = set()
        self._completed_seen = 0
        self._completed_unseen = 0
        self._failed: dict[str, int] = {}
        self._high: dict[str, int] = {}
        self._peaks: dict[tuple[str, str], float] = {}
        self._histograms: dict[tuple[str, str], latency.LatencyHistogram] = {}

    def observe(self, snapshot: stats.CheckpointStats, restarts: int) -> CheckpointTotals:
        visible = {e.checkpoint_id: e for e in _finished(snapshot)}
        for checkpoint_id in sorted(set(visible) - self._seen):
            self._count(visible[checkpoint_id])
        # An entry not visible now never will be again (the history only moves forward),
        # so remembering the visible ids is enough, and bounded.
        self._seen = set(visible)
        counts = snapshot.counts
        missed_failed = counts.failed - sum(self._failed.values())
        if missed_failed > 0:
            self._failed[UNKNOWN_REASON] = self._failed.get(UNKNOWN_REASON, 0) + missed_failed
        missed_completed = counts.completed - self._completed_seen - self._completed_unseen
        if missed_completed > 0:
            self._completed_unseen += missed_completed
        return CheckpointTotals(
            triggered=self._monotonic("triggered", counts.triggered),
            completed=self._completed_seen + self._completed_unseen,
            failed_by_reason=dict(self._failed),
            rejected=self._monotonic("rejected", counts.rejected),
            restarts=self._monotonic("restarts", restarts),
        )

    def peak(self, family: str, label: str, value: float) -> float:
        """The highest ``value`` seen for this series (cumulative job counters may dip)."""
        key = (family, label)
        best = max(value, self._peaks.get(key, value))
        self._peaks[key] = best
        return best

    def peak_histogram(
        self, family: str, step: str, now: latency.LatencyHistogram
    ) -> latency.LatencyHistogram:
        """Bucket by bucket the highest counts seen for this series (no bucket goes down)."""
        best = self._histograms.get((family, step))
        served = now if best is None else now.envelope(best)
        self._histograms[(family, step)] = served
        return served

    def _count(self, entry: stats.CheckpointStatsEntry) -> None:
        if entry.status is stats.CheckpointStatus.COMPLETED:
            self._completed_seen += 1
            if entry.duration is not None:
                self.durations.observe(max(entry.duration, 0.0))
        else:
            reason = UNKNOWN_REASON if entry.failure_reason is None else entry.failure_reason.value
            self._failed[reason] = self._failed.get(reason, 0) + 1

    def _monotonic(self, name: str, value: int) -> int:
        best = max(value, self._high.get(name, value))
        self._high[name] = best
        return best


def _finished(snapshot: stats.CheckpointStats) -> Iterator[stats.CheckpointStatsEntry]:
    candidates = (
        *snapshot.history,
        snapshot.latest_completed,
        snapshot.latest_failed,
        snapshot.latest_savepoint,
    )
    for entry in candidates:
        if entry is not None and entry.status is not stats.CheckpointStatus.IN_PROGRESS:
            yield entry
