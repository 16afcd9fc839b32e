"""A sink's arrival and commit latency, from the creation times sources stamp into records.

Records that carry :data:`~barrier_runtime.api.sources.CREATED_COLUMN` (an
int, nanoseconds since the Unix epoch, ``time.time_ns()`` at creation) are
measured by every sink they reach; records without it are not measured.

*Arrival latency* is ``now - created`` when the sink writer has taken the
batch. *Commit latency* is ``commit time - created``: a record written
between checkpoints *n-1* and *n* is published when checkpoint *n* (or, after
aborts, a later one) completes and the sink commits. The sink keeps the
creation times of every epoch not yet committed as a histogram of creation
instants (at most :data:`MAX_BINS` bins per epoch, coarsened when an epoch
runs long), so memory stays bounded however many records an epoch holds.

Threading: :class:`SinkLatency` is fed by the sink's task thread; the
histograms it exposes are immutable values, replaced (never mutated) after
every batch, so a metrics thread may read them at any time.

>>> rec = SinkLatency(clock_ns=lambda: 5_000_000_000)
>>> rec.observe([4_990_000_000, 4_999_000_000])
>>> rec.arrival.counts[:5]
(1, 0, 0, 1, 0)
>>> rec.epoch_ended(1)
>>> rec.committed(1, now_ns=5_400_000_000)
>>> rec.commit.count, rec.commit.quantile(1.0)
(2, 0.5)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import sources
from barrier_runtime.core import latency

MAX_BINS = 4096
"""Most creation-time bins an uncommitted epoch keeps (then they are merged pairwise)."""
_FIRST_RESOLUTION_NS = 100_000
_BOUNDS_NS = np.array([round(b * 1e9) for b in latency.BOUNDS], dtype=np.int64)
_BUCKETS = len(latency.BOUNDS) + 1


def created_times(batch: batch_mod.Batch) -> npt.NDArray[np.int64] | None:
    """The batch's creation stamps (ns), or None when its records carry none."""
    if not len(batch):
        return None
    if batch.holds_arrow:
        arrow = batch.to_arrow()
        index = arrow.schema.get_field_index(sources.CREATED_COLUMN)
        if index < 0:
            return None
        column = arrow.column(index)
        if column.null_count or not pa.types.is_integer(column.type):
            return None
        return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64)
    rows = batch.rows()
    first = rows[0]
    if not isinstance(first, dict) or not isinstance(first.get(sources.CREATED_COLUMN), int):
        return None
    try:
        stamps = [r[sources.CREATED_COLUMN] for r in rows]
    except (KeyError, TypeError):  # a record without the stamp: the batch is not measured
        return None
    if not all(isinstance(s, int) for s in stamps):
        return None
    return np.array(stamps, dtype=np.int64)


def histogram_ns(
    latencies_ns: npt.NDArray[np.int64], weights: Sequence[int] | None = None
) -> latency.LatencyHistogram:
    """The histogram of ``latencies_ns`` (each counted ``weights[i]`` times if given)."""
    buckets = np.searchsorted(_BOUNDS_NS, latencies_ns, side="left")
    w = None if weights is None else np.asarray(weights, dtype=np.int64)
    counts = np.bincount(buckets, weights=w, minlength=_BUCKETS)
    seconds = latencies_ns.astype(np.float64) / 1e9
    total = float(seconds.sum() if w is None else (seconds * w).sum())
    return latency.LatencyHistogram(tuple(int(c) for c in counts), total)


class _CreationTimes:
    """Creation instants of one epoch: counts per bin of ``resolution`` ns."""

    def __init__(self) -> None:
        self.resolution = _FIRST_RESOLUTION_NS
        self.bins: dict[int, int] = {}

    def add(self, created: npt.NDArray[np.int64]) -> None:
        keys, counts = np.unique(created // self.resolution, return_counts=True)
        for k, n in zip(keys.tolist(), counts.tolist(), strict=True):
            self.bins[k] = self.bins.get(k, 0) + n
        while len(self.bins) > MAX_BINS:
            self.resolution *= 2
            coarse: dict[int, int] = {}
            for k, n in self.bins.items():
                coarse[k // 2] = coarse.get(k // 2, 0) + n
            self.bins = coarse

    def latencies(self, now_ns: int) -> latency.LatencyHistogram:
        if not self.bins:
            return latency.LatencyHistogram()
        keys = np.fromiter(self.bins.keys(), dtype=np.int64, count=len(self.bins))
        mids = keys * self.resolution + self.resolution // 2
        return histogram_ns(np.maximum(now_ns - mids, 0), list(self.bins.values()))


class SinkLatency:
    """Arrival and commit latency histograms of one sink subtask (see the module essay)."""

    def __init__(self, clock_ns: Callable[[], int] = time.time_ns) -> None:
        self._clock_ns = clock_ns
        self.arrival = latency.LatencyHistogram()
        self.commit = latency.LatencyHistogram()
        self._open = _CreationTimes()
        self._pending: list[tuple[int, _CreationTimes]] = []

    def observe(self, created: npt.NDArray[np.int64] | Sequence[int]) -> None:
        """Records created at ``created`` (ns) have just been written."""
        stamps = np.asarray(created, dtype=np.int64)
        if not len(stamps):
            return
        self.arrival = self.arrival.merged(histogram_ns(self._clock_ns() - stamps))
        self._open.add(stamps)

    def epoch_ended(self, checkpoint_id: int) -> None:
        """The sink pre-committed checkpoint ``checkpoint_id``: what it wrote belongs to it."""
        if self._open.bins:
            self._pending.append((checkpoint_id, self._open))
            self._open = _CreationTimes()

    def committed(self, checkpoint_id: int, now_ns: int | None = None) -> None:
        """Checkpoint ``checkpoint_id`` completed: its records and older ones are published."""
        now = self._clock_ns() if now_ns is None else now_ns
        due = [times for cid, times in self._pending if cid <= checkpoint_id]
        if not due:
            return
        self._pending = [(cid, t) for cid, t in self._pending if cid > checkpoint_id]
        total = self.commit
        for times in due:
            total = total.merged(times.latencies(now))
        self.commit = total
