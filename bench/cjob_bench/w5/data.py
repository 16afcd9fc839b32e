"""W5's input: events in global event-time order with bounded disorder, and the exact window counts.

Event ``i`` of ``events`` has ``ts = T0 + i * span_ms // events`` (milliseconds,
so the events are spread evenly over ``span_ms`` of event time, in order),
``key`` uniform over ``keys`` and ``value`` in [0, 1000). A fraction
``out_of_order`` of them, chosen at random, is moved back in event time by
1 … ``disorder_ms`` ms while keeping its place in the files: out of order,
but never by more than the watermark's bound, so no event is late and every
system must produce the exact counts.

The events go to ``files`` Parquet files of consecutive stretches (file 0
holds the first ``events / files`` events, and so on): read one after the
other they are in global time order, as a log of events is.

The reference is the count of every ``(key, window start)`` of the 1-minute
tumbling windows, computed with NumPy over the same arrays.

>>> import tempfile, pathlib
>>> d = generate(pathlib.Path(tempfile.mkdtemp()), events=10_000, keys=10, files=2,
...              span_ms=600_000, out_of_order=0.01, disorder_ms=5_000, seed=1)
>>> sorted(p.name for p in d.parquet.iterdir())
['part-00000.parquet', 'part-00001.parquet']
>>> int(d.reference.counts.sum()), len(d.reference.counts) <= 10 * 11
(10000, True)
"""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

T0 = 1_700_000_040_000
"""The first event time: a whole minute (ms since the epoch)."""
WINDOW_MS = 60_000
SCHEMA_DDL = "key LONG, value LONG, ts LONG"
ROW_GROUP = 131_072


@dataclasses.dataclass(frozen=True, slots=True)
class WindowCounts:
    """Counts per ``(key, window start)``, sorted by window start then key."""

    keys: npt.NDArray[np.int64]
    starts: npt.NDArray[np.int64]
    counts: npt.NDArray[np.int64]

    @staticmethod
    def of(keys: npt.NDArray[np.int64], starts: npt.NDArray[np.int64]) -> WindowCounts:
        """Count the pairs (each pair once per occurrence)."""
        order = np.lexsort((keys, starts))
        k, s = keys[order], starts[order]
        if not len(k):
            return WindowCounts(k, s, np.zeros(0, np.int64))
        first = np.flatnonzero(np.r_[True, (k[1:] != k[:-1]) | (s[1:] != s[:-1])])
        counts = np.diff(np.r_[first, len(k)]).astype(np.int64)
        return WindowCounts(k[first], s[first], counts)

    def closed_by(self, watermark: int) -> WindowCounts:
        """The windows a watermark of ``watermark`` has closed (end - 1 <= watermark)."""
        keep = self.starts + WINDOW_MS - 1 <= watermark
        return WindowCounts(self.keys[keep], self.starts[keep], self.counts[keep])


@dataclasses.dataclass(frozen=True, slots=True)
class DataSet:
    parquet: pathlib.Path
    events: int
    keys: int
    files: int
    disorder_ms: int
    max_ts: int
    reference: WindowCounts


def generate(
    directory: pathlib.Path,
    *,
    events: int,
    keys: int,
    files: int,
    span_ms: int,
    out_of_order: float,
    disorder_ms: int,
    seed: int,
) -> DataSet:
    parquet = directory / "parquet"
    parquet.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    ts = T0 + np.arange(events, dtype=np.int64) * span_ms // events
    moved = rng.random(events) < out_of_order
    ts[moved] -= rng.integers(1, disorder_ms + 1, int(moved.sum()), dtype=np.int64)
    key = rng.integers(0, keys, events, dtype=np.int64)
    value = rng.integers(0, 1000, events, dtype=np.int64)
    bounds = np.linspace(0, events, files + 1).astype(np.int64)
    for f in range(files):
        lo, hi = int(bounds[f]), int(bounds[f + 1])
        table = pa.table({"key": key[lo:hi], "value": value[lo:hi], "ts": ts[lo:hi]})
        pq.write_table(table, parquet / f"part-{f:05d}.parquet", row_group_size=ROW_GROUP)
    starts = ts - ts % WINDOW_MS
    reference = WindowCounts.of(key, starts)
    return DataSet(parquet, events, keys, files, disorder_ms, int(ts.max()), reference)


def compare(got: WindowCounts, expected: WindowCounts) -> dict[str, int]:
    """Windows missing, extra (a pair not expected, or emitted again) and with a wrong count."""
    got_codes, want_codes = _codes(got), _codes(expected)
    order = np.argsort(want_codes)
    want_sorted, want_counts = want_codes[order], expected.counts[order]
    unique, first = np.unique(got_codes, return_index=True)
    at = np.clip(np.searchsorted(want_sorted, unique), 0, max(len(want_sorted) - 1, 0))
    known = (want_sorted[at] == unique) if len(want_sorted) else np.zeros(len(unique), bool)
    wrong = np.count_nonzero(got.counts[first[known]] != want_counts[at[known]])
    return {
        "missing": int(len(want_codes) - np.count_nonzero(known)),
        "extra": int(len(got_codes) - len(unique) + np.count_nonzero(~known)),
        "wrong_count": int(wrong),
    }


def _codes(w: WindowCounts) -> npt.NDArray[np.int64]:
    """One int64 per ``(key, window start)``: window number above, key below bit 32."""
    if len(w.keys) and (w.keys.min() < 0 or w.keys.max() >= 2**32 or (w.starts % WINDOW_MS).any()):
        raise ValueError("keys must be in [0, 2**32) and starts whole windows")
    return np.asarray((w.starts // WINDOW_MS) << 32 | w.keys, np.int64)
