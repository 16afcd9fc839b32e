"""Columnar window state: per window start, one *pane* of keys and their partial aggregates.

A pane holds every key seen in one window (``[start, start + size)``) of one
subtask: the keys as one Arrow array, and per key the count, sum, min and max
of the values so far and how many times its result was emitted (``fired``),
as NumPy arrays aligned with the keys. A batch's groups (already aggregated
per key and window by Arrow) merge into a pane with one hash lookup of the
whole group column (``pyarrow.compute.index_in``) and a few vectorised
updates; keys new to the pane are appended. Nothing is done per record or
per key in Python, whatever the keys' type.

Sums, minimums and maximums keep the type of the value column: int64 for
integer columns (exact, like the per-record window's sum), float64 otherwise.
An empty minimum or maximum (only nulls seen) is told by ``count == 0``.

Snapshots
    :func:`encode` writes the panes as one Arrow table in the keyed-state
    format (content mark ``window-slots``): key group, key (value codec),
    window start, count, sum, min, max, fired. It splits by key group, so a
    restore at any parallelism takes the rows of its key groups
    (:func:`decode`). Tables written before int64 sums (float64 columns) are
    read too.

>>> panes = Panes("sum", np.dtype(np.int64))
>>> pane = panes.pane(0)
>>> def partials(count, total, low, high):
...     return Partials(*(np.array(a) for a in (count, total, low, high)))
>>> pane.merge(pa.array([7, 3]), partials([2, 1], [10, 4], [1, 4], [9, 4]))
array([0, 1])
>>> pane.merge(pa.array([3]), partials([1], [5], [5], [5]))
array([1])
>>> pane.keys.to_pylist(), pane.count.tolist(), pane.sum.tolist(), pane.max.tolist()
([7, 3], [2, 2], [10, 9], [9, 5])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from barrier_runtime.state import key_groups, keyed

Ints = npt.NDArray[np.int64]
Values = npt.NDArray[Any]
CONTENT = b"window-slots"


@dataclasses.dataclass(frozen=True, slots=True)
class Partials:
    """Per group of a batch: the count and, with a value column, sum, min and max."""

    count: Ints
    sum: Values | None = None
    min: Values | None = None
    max: Values | None = None


class Pane:
    """The keys of one window start and their aggregates; see the module essay."""

    __slots__ = ("count", "fired", "keys", "max", "min", "sum")

    def __init__(self, dtype: np.dtype[Any]) -> None:
        self.keys: pa.Array | None = None
        self.count: Ints = np.zeros(0, np.int64)
        self.sum: Values = np.zeros(0, dtype)
        self.min: Values = np.zeros(0, dtype)
        self.max: Values = np.zeros(0, dtype)
        self.fired: Ints = np.zeros(0, np.int64)

    def __len__(self) -> int:
        return len(self.count)

    def merge(self, keys: pa.Array, partials: Partials) -> Ints:
        """Add each distinct key's partials; the position of every key in the pane."""
        if self.keys is None:
            self.keys = keys
            where = np.full(len(keys), -1, np.int64)
        else:
            if keys.type != self.keys.type:
                keys = keys.cast(self.keys.type)
            where = pc.index_in(keys, value_set=self.keys).fill_null(-1).to_numpy()
            where = where.astype(np.int64, copy=False)
        found = where >= 0
        if found.any():
            at = where[found]
            self.count[at] += partials.count[found]
            if partials.sum is not None:
                self.sum[at] += partials.sum[found]
                assert partials.min is not None and partials.max is not None
                self.min[at] = np.minimum(self.min[at], partials.min[found])
                self.max[at] = np.maximum(self.max[at], partials.max[found])
        new = np.flatnonzero(~found)
        if len(new):
            where[new] = np.arange(len(self), len(self) + len(new))
            self._append(keys, new, partials)
        return where

    def _append(self, keys: pa.Array, new: npt.NDArray[np.intp], partials: Partials) -> None:
        first = len(self) == 0
        if not first:
            assert self.keys is not None
            self.keys = pa.concat_arrays([self.keys, keys.take(pa.array(new))])
        dtype = self.sum.dtype
        lo, hi = identities(dtype)
        self.count = np.concatenate([self.count, partials.count[new]])
        self.fired = np.concatenate([self.fired, np.zeros(len(new), np.int64)])
        if partials.sum is None:
            empty = np.zeros(len(new), dtype)
            self.sum = np.concatenate([self.sum, empty])
            self.min = np.concatenate([self.min, np.full(len(new), hi, dtype)])
            self.max = np.concatenate([self.max, np.full(len(new), lo, dtype)])
        else:
            assert partials.min is not None and partials.max is not None
            self.sum = np.concatenate([self.sum, partials.sum[new].astype(dtype)])
            self.min = np.concatenate([self.min, partials.min[new].astype(dtype)])
            self.max = np.concatenate([self.max, partials.max[new].astype(dtype)])

    def key_order(self) -> Ints:
        """Positions in key order (the order a window's results are emitted in)."""
        if self.keys is None:
            return np.zeros(0, np.int64)
        return np.asarray(pc.sort_indices(self.keys).to_numpy(), np.int64)


class Panes:
    """The live panes of one subtask by window start, all of one aggregate and value type."""

    def __init__(self, how: str, dtype: np.dtype[Any]) -> None:
        self.how = how
        self.dtype = dtype
        self._by_start: dict[int, Pane] = {}

    def __contains__(self, start: int) -> bool:
        return start in self._by_start

    def __len__(self) -> int:
        return len(self._by_start)

    def items(self) -> Iterator[tuple[int, Pane]]:
        return iter(self._by_start.items())

    def get(self, start: int) -> Pane | None:
        return self._by_start.get(start)

    def pane(self, start: int) -> Pane:
        """The pane of ``start``, created empty if it is new."""
        pane = self._by_start.get(start)
        if pane is None:
            self._by_start[start] = pane = Pane(self.dtype)
        return pane

    def drop(self, start: int) -> None:
        self._by_start.pop(start, None)

    def widen(self, dtype: np.dtype[Any]) -> None:
        """Hold ``dtype`` values from now on (restored integer panes meeting a float column)."""
        if dtype == self.dtype:
            return
        for pane in self._by_start.values():
            empty = pane.count == 0
            pane.sum = pane.sum.astype(dtype)
            pane.min = np.where(empty, identities(dtype)[1], pane.min).astype(dtype)
            pane.max = np.where(empty, identities(dtype)[0], pane.max).astype(dtype)
        self.dtype = dtype


def value_dtype(column_type: pa.DataType | None) -> np.dtype[Any]:
    """int64 for integer value columns (and for counts), float64 for anything else."""
    if column_type is None or pa.types.is_integer(column_type):
        return np.dtype(np.int64)
    return np.dtype(np.float64)


def identities(dtype: np.dtype[Any]) -> tuple[Any, Any]:
    """The (lowest, highest) value of ``dtype``: the max and min of nothing."""
    if dtype.kind == "f":
        return -np.inf, np.inf
    info = np.iinfo(dtype)
    return info.min, info.max


# -- snapshots --------------------------------------------------------------------------

COLUMNS = ("start", "count", "sum", "min", "max", "fired")


def schema(dtype: np.dtype[Any]) -> pa.Schema:
    value = pa.from_numpy_dtype(dtype)
    return pa.schema(
        [
            ("key_group", pa.int32()),
            ("key", pa.binary()),
            ("start", pa.int64()),
            ("count", pa.int64()),
            ("sum", value),
            ("min", value),
            ("max", value),
            ("fired", pa.int64()),
        ],
        metadata={keyed.FORMAT_KEY: keyed.FORMAT, keyed.CONTENT_KEY: CONTENT},
    )


@dataclasses.dataclass(frozen=True, slots=True)
class PanesCopy:
    """The live panes as of a barrier (arrays copied); encoded later, on the upload thread."""

    dtype: np.dtype[Any]
    max_parallelism: int
    parts: tuple[tuple[int, pa.Array, dict[str, Values]], ...]

    @staticmethod
    def of(panes: Panes, max_parallelism: int) -> PanesCopy:
        parts = []
        for start, pane in panes.items():
            if pane.keys is None or not len(pane):
                continue
            arrays = {name: getattr(pane, name).copy() for name in COLUMNS if name != "start"}
            parts.append((start, pane.keys, arrays))  # Arrow arrays are immutable
        return PanesCopy(panes.dtype, max_parallelism, tuple(parts))

    def encode(self) -> bytes:
        target = schema(self.dtype)
        tables = [self._table(start, keys, arrays, target) for start, keys, arrays in self.parts]
        table = pa.concat_tables(tables) if tables else target.empty_table()
        table = table.sort_by("key_group")
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, target, options=keyed.IPC_OPTIONS) as writer:
            writer.write_table(table)
        return bytes(sink.getvalue().to_pybytes())

    def _table(
        self, start: int, keys: pa.Array, arrays: dict[str, Values], target: pa.Schema
    ) -> pa.Table:
        columns: dict[str, Any] = {
            "key_group": key_groups.key_groups_of(keys, self.max_parallelism).astype(np.int32),
            "key": keyed.encode_column(keys.to_pylist()),
            "start": np.full(len(keys), start, np.int64),
        }
        columns.update(arrays)
        return pa.table(columns, schema=target)


def snapshot_dtype(blobs: Iterable[bytes]) -> np.dtype[Any]:
    """The sums' dtype of snapshot blobs: float64 if any holds floats, else int64."""
    for blob in blobs:
        table = keyed.read_table(blob)
        if table.num_rows and pa.types.is_floating(table.schema.field("sum").type):
            return np.dtype(np.float64)
    return np.dtype(np.int64)


def decode(blobs: Iterable[bytes], key_group_range: tuple[int, int], panes: Panes) -> None:
    """Load the rows of ``key_group_range`` from snapshot blobs into ``panes``."""
    lo, hi = key_group_range
    for blob in blobs:
        table = keyed.read_table(blob)
        groups = table.column("key_group").to_numpy()
        table = table.take(pa.array(np.flatnonzero((groups >= lo) & (groups <= hi))))
        if not table.num_rows:
            continue
        keys = pa.array(keyed.decode_column(table.column("key")))
        arrays = {name: table.column(name).to_numpy() for name in COLUMNS}
        starts = arrays["start"]
        for start in np.unique(starts).tolist():
            rows = np.flatnonzero(starts == start)
            pane = panes.pane(int(start))
            lowest, highest = identities(panes.dtype)
            partials = Partials(
                arrays["count"][rows],
                _as(arrays["sum"][rows], panes.dtype, 0),
                _as(arrays["min"][rows], panes.dtype, highest),
                _as(arrays["max"][rows], panes.dtype, lowest),
            )
            where = pane.merge(keys.take(pa.array(rows)), partials)
            pane.fired[where] = arrays["fired"][rows]


def _as(values: Values, dtype: np.dtype[Any], empty: Any) -> Values:
    """``values`` as ``dtype``; a non-finite float (an old table's empty min or max): ``empty``."""
    if values.dtype == dtype:
        return values
    if values.dtype.kind == "f" and dtype.kind != "f":
        finite = np.isfinite(values)
        out = np.where(finite, values, 0).astype(dtype)
        out[~finite] = empty
        return out
    return values.astype(dtype)
