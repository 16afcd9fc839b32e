"""Every workload's input: generated events as files, and the exact answers to check runs against.

**W1-W3v** (:func:`generate`): the same events as Parquet and JSON-lines files.
The recovery run (``run recovery``) generates its W1 events in the job
(``ColumnarGeneratorSource``) and gives Spark SS the same events as Parquet
(:func:`write_generated_parquet`).

Events: ``key`` int64 uniform over ``keys``, ``value`` int64 in [0, 1000),
``ts`` int64 event time (milliseconds, increasing), ``kind`` one of
:data:`KINDS` uniformly (W3 keeps ``kind == "buy"``). Written once per run
as ``files`` Parquet files and as many JSON-lines files with the same rows.

**W5** (:func:`generate_windows`): event ``i`` of ``events`` has ``ts = T0 + i * span_ms // events`` (milliseconds,
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
>>> d = generate(pathlib.Path(tempfile.mkdtemp()), events=1000, keys=10, files=2, seed=1)
>>> sorted(p.name for p in d.parquet.iterdir())
['part-00000.parquet', 'part-00001.parquet']
>>> int(d.counts.sum()), int(d.buy_counts.sum()) < 1000
(1000, True)
>>> w = generate_windows(pathlib.Path(tempfile.mkdtemp()), events=10_000, keys=10, files=2,
...              span_ms=600_000, out_of_order=0.01, disorder_ms=5_000, seed=1)
>>> sorted(p.name for p in w.parquet.iterdir())
['part-00000.parquet', 'part-00001.parquet']
>>> int(w.reference.counts.sum()), len(w.reference.counts) <= 10 * 11
(10000, True)
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from barrier_runtime.connectors.columnar_generator import ColumnarGeneratorSource

KINDS = ("view", "click", "buy", "scroll")
FILTER_KIND = "buy"
SCHEMA_DDL = "key LONG, value LONG, ts LONG, kind STRING"
ROW_GROUP = 131_072


@dataclasses.dataclass(frozen=True, slots=True)
class DataSet:
    """Where the files are and what every system must answer (index = key)."""

    parquet: pathlib.Path
    jsonl: pathlib.Path
    events: int
    keys: int
    files: int
    copies: int
    sums: np.ndarray
    counts: np.ndarray
    buy_counts: np.ndarray

    def expected(self, workload: str) -> np.ndarray:
        """The final per-key value of ``workload`` (W1 sum, W2 count, W3 and W3v filtered count)."""
        return {"W1": self.sums, "W2": self.counts, "W3": self.buy_counts, "W3v": self.buy_counts}[
            workload
        ]

    def replicated(self, directory: pathlib.Path, copies: int) -> DataSet:
        """The same files hard-linked ``copies`` times (long runs without more disk)."""
        parquet, jsonl = directory / "parquet", directory / "jsonl"
        for src, dst in ((self.parquet, parquet), (self.jsonl, jsonl)):
            dst.mkdir(parents=True)
            for path in sorted(src.iterdir()):
                for c in range(copies):
                    os.link(path, dst / f"c{c:03d}-{path.name}")
        return dataclasses.replace(
            self,
            parquet=parquet,
            jsonl=jsonl,
            events=self.events * copies,
            files=self.files * copies,
            copies=self.copies * copies,
            sums=self.sums * copies,
            counts=self.counts * copies,
            buy_counts=self.buy_counts * copies,
        )


def generate(directory: pathlib.Path, *, events: int, keys: int, files: int, seed: int) -> DataSet:
    parquet, jsonl = directory / "parquet", directory / "jsonl"
    parquet.mkdir(parents=True)
    jsonl.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    sums = np.zeros(keys, dtype=np.int64)
    counts = np.zeros(keys, dtype=np.int64)
    buys = np.zeros(keys, dtype=np.int64)
    bounds = np.linspace(0, events, files + 1).astype(np.int64)
    for f in range(files):
        n = int(bounds[f + 1] - bounds[f])
        key = rng.integers(0, keys, n, dtype=np.int64)
        value = rng.integers(0, 1000, n, dtype=np.int64)
        ts = 1_700_000_000_000 + np.arange(bounds[f], bounds[f + 1], dtype=np.int64)
        kind_idx = rng.integers(0, len(KINDS), n)
        kind = pa.DictionaryArray.from_arrays(pa.array(kind_idx, pa.int32()), list(KINDS))
        table = pa.table({"key": key, "value": value, "ts": ts, "kind": kind.cast(pa.string())})
        pq.write_table(table, parquet / f"part-{f:05d}.parquet", row_group_size=ROW_GROUP)
        _write_jsonl(table, jsonl / f"part-{f:05d}.jsonl")
        counts += np.bincount(key, minlength=keys)
        sums += np.bincount(key, weights=value, minlength=keys).astype(np.int64)
        buy = kind_idx == KINDS.index(FILTER_KIND)
        buys += np.bincount(key[buy], minlength=keys)
    return DataSet(parquet, jsonl, events, keys, files, 1, sums, counts, buys)


def _write_jsonl(table: pa.Table, path: pathlib.Path) -> None:
    """``{"key":…,"value":…,"ts":…,"kind":"…"}`` per line, built with Arrow compute."""
    parts: list[pa.Array | str] = []
    for i, name in enumerate(table.column_names):
        opener = "{" if i == 0 else ","
        col = table.column(name).combine_chunks()
        if pa.types.is_string(col.type):
            parts += [f'{opener}"{name}":"', col, '"']
        else:
            parts += [f'{opener}"{name}":', pc.cast(col, pa.string())]
    parts.append("}\n")
    arrays = [p if isinstance(p, pa.Array) else pa.scalar(p) for p in parts]
    lines = pc.binary_join_element_wise(*arrays, "")
    chunks = lines.chunks if isinstance(lines, pa.ChunkedArray) else [lines]
    with path.open("wb") as out:
        for chunk in chunks:
            large = chunk.cast(pa.large_string())  # one data buffer: the lines, back to back
            offsets = np.frombuffer(large.buffers()[1], dtype=np.int64)
            first, last = offsets[large.offset], offsets[large.offset + len(large)]
            out.write(memoryview(large.buffers()[2])[first:last])


# -- the recovery run's events: the columnar generator's, as Parquet for Spark SS ----------------


def write_generated_parquet(
    source: ColumnarGeneratorSource, directory: pathlib.Path, rows_per_file: int
) -> int:
    """Every partition of ``source`` in files of ``rows_per_file`` rows: how many files."""
    directory.mkdir()
    files = 0
    for files, table in enumerate(generated_chunks(source, rows_per_file), start=1):
        pq.write_table(table, directory / f"part-{files:05d}.parquet")
    return files


def generated_chunks(source: ColumnarGeneratorSource, size: int) -> Iterator[pa.Table]:
    """The events of ``source``, partition after partition, ``size`` rows a table."""
    for p in range(source.num_partitions):
        total = source.partition_events(p) or 0
        for start in range(0, total, size):
            yield pa.Table.from_batches([source.events_between(p, start, min(start + size, total))])


# -- W5: events in event-time order with bounded disorder ----------------------------------


T0 = 1_700_000_040_000
"""The first event time: a whole minute (ms since the epoch)."""
WINDOW_MS = 60_000
WINDOW_SCHEMA_DDL = "key LONG, value LONG, ts LONG"


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
class WindowDataSet:
    """W5's files and the exact count of every window."""

    parquet: pathlib.Path
    events: int
    keys: int
    files: int
    disorder_ms: int
    max_ts: int
    reference: WindowCounts


def generate_windows(
    directory: pathlib.Path,
    *,
    events: int,
    keys: int,
    files: int,
    span_ms: int,
    out_of_order: float,
    disorder_ms: int,
    seed: int,
) -> WindowDataSet:
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
    return WindowDataSet(parquet, events, keys, files, disorder_ms, int(ts.max()), reference)


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
