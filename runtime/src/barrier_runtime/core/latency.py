"""Latency histograms: fixed buckets, bounded memory, summed across workers and attempts.

A :class:`LatencyHistogram` counts observations (seconds) per bucket of
:data:`BOUNDS` plus an overflow bucket, and their sum. Sinks fill them from
the creation times sources stamp into records
(:data:`barrier_runtime.api.sources.CREATED_COLUMN`); workers send them to the
driver with their other counters; the driver renders them as Prometheus
histograms and estimates quantiles for the live view. The value is frozen and
made only of ints and floats, so it travels through the data-only value codec.

>>> h = LatencyHistogram.of_seconds([0.004, 0.004, 0.02, 7.0])
>>> h.count, h.counts[:4]
(4, (0, 0, 2, 0))
>>> h.quantile(0.5), h.quantile(0.99)
(0.005, 10.0)
>>> h.merged(h).count, h.merged(h).since(h) == h
(8, True)
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass

BOUNDS: tuple[float, ...] = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
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
)
"""Upper bounds (seconds, inclusive) of the buckets; a last bucket holds everything above."""


@dataclass(frozen=True, slots=True)
class LatencyHistogram:
    """Counts per bucket of :data:`BOUNDS` (``len(BOUNDS) + 1`` of them) and their sum."""

    counts: tuple[int, ...] = (0,) * (len(BOUNDS) + 1)
    sum_seconds: float = 0.0

    def __post_init__(self) -> None:
        if len(self.counts) != len(BOUNDS) + 1:
            raise ValueError(f"a latency histogram has {len(BOUNDS) + 1} buckets")

    @classmethod
    def of_seconds(cls, values: Iterable[float]) -> LatencyHistogram:
        counts = [0] * (len(BOUNDS) + 1)
        total = 0.0
        for v in values:
            counts[bisect.bisect_left(BOUNDS, v)] += 1
            total += v
        return cls(tuple(counts), total)

    @property
    def count(self) -> int:
        return sum(self.counts)

    def merged(self, other: LatencyHistogram) -> LatencyHistogram:
        counts = tuple(a + b for a, b in zip(self.counts, other.counts, strict=True))
        return LatencyHistogram(counts, self.sum_seconds + other.sum_seconds)

    def envelope(self, other: LatencyHistogram) -> LatencyHistogram:
        """Bucket by bucket the larger count (and the larger sum) of the two.

        >>> a = LatencyHistogram.of_seconds([0.001, 2.0])
        >>> b = LatencyHistogram.of_seconds([0.001] * 3)
        >>> a.envelope(b).count
        4
        """
        counts = tuple(max(a, b) for a, b in zip(self.counts, other.counts, strict=True))
        return LatencyHistogram(counts, max(self.sum_seconds, other.sum_seconds))

    def since(self, earlier: LatencyHistogram) -> LatencyHistogram:
        """The observations added after ``earlier`` (a window of a cumulative histogram)."""
        counts = tuple(max(0, a - b) for a, b in zip(self.counts, earlier.counts, strict=True))
        return LatencyHistogram(counts, max(0.0, self.sum_seconds - earlier.sum_seconds))

    def cumulative(self) -> list[tuple[str, float]]:
        """``(le, count)`` pairs as Prometheus wants them, ending with ``+Inf``."""
        out, running = [], 0
        for bound, n in zip((*(f"{b:g}" for b in BOUNDS), "+Inf"), self.counts, strict=True):
            running += n
            out.append((bound, float(running)))
        return out

    def quantile(self, q: float) -> float | None:
        """The upper bound of the bucket holding quantile ``q`` (an over-estimate), or None.

        The overflow bucket has no upper bound: a quantile that falls in it is
        reported as the last finite bound (an under-estimate there).
        """
        total = self.count
        if not total:
            return None
        rank, running = q * total, 0
        for bound, n in zip(BOUNDS, self.counts, strict=False):
            running += n
            if running and running >= rank:
                return bound
        return BOUNDS[-1]


def merge_into(totals: dict[str, LatencyHistogram], other: dict[str, LatencyHistogram]) -> None:
    """Add ``other``'s histograms to ``totals``, step by step."""
    for step, h in other.items():
        mine = totals.get(step)
        totals[step] = h if mine is None else mine.merged(h)


def combined(per_step: Iterable[LatencyHistogram]) -> LatencyHistogram:
    """All steps' observations in one histogram."""
    total = LatencyHistogram()
    for h in per_step:
        total = total.merged(h)
    return total
