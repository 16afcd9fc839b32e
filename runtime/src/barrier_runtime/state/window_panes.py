"""Columnar window state: per window start, one *pane* of keys and their partial aggregates.

A pane holds every key seen in one window (``[start, start + size)``) of one
subtask: the keys as one Arrow array, and per key the number of records, how
many times its result was emitted (``fired``) and, per value column the step
reads, the count of values, their sum, min and max so far, as NumPy arrays
aligned with the keys. A batch's groups (already aggregated per key and window
by Arrow) merge into a pane with one hash lookup of the whole group column
(``pyarrow.compute.index_in``) and a few vectorised updates per column; keys
new to the pane are appended. Nothing is done per record or per key in
Python, whatever the keys' type.

Sums, minimums and maximums keep the type of their value column: int64 for
integer columns (exact, like the per-record window's sum), float64 otherwise.
An empty minimum or maximum (only nulls seen) is told by a count of 0.

Snapshots and their deltas are made and read by
:mod:`~barrier_runtime.state.pane_snapshots`. Once :meth:`Panes.track_changes`
is called, every pane marks the rows a merge or a firing changed, and the panes
remember the window starts they dropped, for the next delta.

>>> panes = Panes({"v": np.dtype(np.int64)})
>>> pane = panes.pane(0)
>>> def partials(count, total, low, high):
...     arrays = [np.array(a) for a in (count, total, low, high)]
...     return Partials(arrays[0], {"v": ValuePartials(*arrays)})
>>> pane.merge(pa.array([7, 3]), partials([2, 1], [10, 4], [1, 4], [9, 4]))
array([0, 1])
>>> pane.merge(pa.array([3]), partials([1], [5], [5], [5]))
array([1])
>>> v = pane.values["v"]
>>> pane.keys.to_pylist(), pane.count.tolist(), v.sum.tolist(), v.max.tolist()
([7, 3], [2, 2], [10, 9], [9, 5])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

Ints = npt.NDArray[np.int64]
Values = npt.NDArray[Any]
CONTENT = b"window-slots"
AGGREGATES = ("count", "sum", "min", "max")
DROPPED_KEY = b"cjob.panes.dropped"
"""A delta's schema metadata: the window starts its subtask dropped (JSON list)."""
RANGE_KEY = b"cjob.state.range"
"""A delta's schema metadata: the key-group range of its subtask (``lo,hi``)."""


@dataclasses.dataclass(frozen=True, slots=True)
class ValuePartials:
    """Per group of a batch, of one value column: its count of values, sum, min and max."""

    count: Ints
    sum: Values
    min: Values
    max: Values

    def take(self, rows: npt.NDArray[np.intp]) -> ValuePartials:
        return ValuePartials(self.count[rows], self.sum[rows], self.min[rows], self.max[rows])


@dataclasses.dataclass(frozen=True, slots=True)
class Partials:
    """Per group of a batch: the number of records, and the partials of each value column."""

    count: Ints
    values: Mapping[str, ValuePartials] = dataclasses.field(default_factory=dict)

    def take(self, rows: npt.NDArray[np.intp]) -> Partials:
        return Partials(self.count[rows], {c: v.take(rows) for c, v in self.values.items()})


class ColumnAggregates:
    """One value column's count, sum, min and max per key of a pane."""

    __slots__ = ("count", "max", "min", "sum")

    def __init__(self, dtype: np.dtype[Any]) -> None:
        self.count: Ints = np.zeros(0, np.int64)
        self.sum: Values = np.zeros(0, dtype)
        self.min: Values = np.zeros(0, dtype)
        self.max: Values = np.zeros(0, dtype)

    def add(self, at: Ints, found: npt.NDArray[np.bool_], partials: ValuePartials) -> None:
        self.count[at] += partials.count[found]
        self.sum[at] += partials.sum[found]
        self.min[at] = np.minimum(self.min[at], partials.min[found])
        self.max[at] = np.maximum(self.max[at], partials.max[found])

    def append(self, new: npt.NDArray[np.intp], partials: ValuePartials | None) -> None:
        dtype = self.sum.dtype
        if partials is None:  # keys new to a column no batch gave values of (restores)
            lo, hi = identities(dtype)
            partials = ValuePartials(
                np.zeros(len(new), np.int64),
                np.zeros(len(new), dtype),
                np.full(len(new), hi, dtype),
                np.full(len(new), lo, dtype),
            )
            new = np.arange(len(new))
        for name in AGGREGATES:
            added = getattr(partials, name)[new].astype(
                self.count.dtype if name == "count" else dtype
            )
            setattr(self, name, np.concatenate([getattr(self, name), added]))

    def widen(self, dtype: np.dtype[Any]) -> None:
        empty = self.count == 0
        self.sum = self.sum.astype(dtype)
        self.min = np.where(empty, identities(dtype)[1], self.min).astype(dtype)
        self.max = np.where(empty, identities(dtype)[0], self.max).astype(dtype)


class Pane:
    """The keys of one window start and their aggregates; see the module essay."""

    __slots__ = ("count", "dirty", "fired", "keys", "values")

    def __init__(self, dtypes: Mapping[str, np.dtype[Any]], *, tracking: bool = False) -> None:
        self.keys: pa.Array | None = None
        self.count: Ints = np.zeros(0, np.int64)
        self.fired: Ints = np.zeros(0, np.int64)
        self.values = {column: ColumnAggregates(dtype) for column, dtype in dtypes.items()}
        self.dirty: npt.NDArray[np.bool_] | None = np.zeros(0, bool) if tracking else None
        """Rows changed since the last delta (when tracking changes)."""

    def __len__(self) -> int:
        return len(self.count)

    def mark(self, rows: npt.NDArray[Any] | slice) -> None:
        """Note that ``rows`` changed (when tracking)."""
        dirty = self.dirty
        if dirty is None:
            return
        if len(dirty) < len(self):
            dirty = self.dirty = np.concatenate([dirty, np.zeros(len(self) - len(dirty), bool)])
        dirty[rows] = True

    def fire(self, at: Ints) -> Ints:
        """Count one more emission of the rows ``at``; how many there were before."""
        before = self.fired[at].copy()
        self.fired[at] += 1
        self.mark(at)
        return before

    def keep(self, rows: npt.NDArray[np.bool_]) -> None:
        """Keep only the rows where ``rows`` is true (a restore removing a dropped window)."""
        self.count, self.fired = self.count[rows], self.fired[rows]
        if self.keys is not None:
            self.keys = self.keys.filter(pa.array(rows))
        for aggregates in self.values.values():
            for name in AGGREGATES:
                setattr(aggregates, name, getattr(aggregates, name)[rows])
        if self.dirty is not None:
            self.dirty = self.dirty[: len(rows)][rows]

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
            for column, given in partials.values.items():
                self.values[column].add(at, found, given)
        new = np.flatnonzero(~found)
        if len(new):
            where[new] = np.arange(len(self), len(self) + len(new))
            if len(self):
                assert self.keys is not None
                self.keys = pa.concat_arrays([self.keys, keys.take(pa.array(new))])
            self.count = np.concatenate([self.count, partials.count[new]])
            self.fired = np.concatenate([self.fired, np.zeros(len(new), np.int64)])
            for column, aggregates in self.values.items():
                aggregates.append(new, partials.values.get(column))
        self.mark(where)
        return where

    def replace(self, keys: pa.Array, partials: Partials, fired: Ints) -> None:
        """Put each key's aggregates and firings in place of the pane's (a delta's rows)."""
        where = self.merge(keys, Partials(np.zeros(len(keys), np.int64), {}))
        self.count[where] = partials.count
        self.fired[where] = fired
        for column, given in partials.values.items():
            aggregates = self.values[column]
            for name in AGGREGATES:
                getattr(aggregates, name)[where] = getattr(given, name)

    def key_order(self) -> Ints:
        """Positions in key order (the order a window's results are emitted in)."""
        if self.keys is None:
            return np.zeros(0, np.int64)
        return np.asarray(pc.sort_indices(self.keys).to_numpy(), np.int64)


class Panes:
    """The live panes of one subtask by window start; ``dtypes``: per value column."""

    def __init__(
        self,
        dtypes: Mapping[str, np.dtype[Any]],
        key_group_range: tuple[int, int] = (0, 0),
        max_parallelism: int = 1,
    ) -> None:
        """``key_group_range`` and ``max_parallelism``: the subtask's (for snapshots)."""
        self.dtypes = dict(dtypes)
        self.start, self.end = key_group_range
        self.max_parallelism = max_parallelism
        self._by_start: dict[int, Pane] = {}
        self._dropped: list[int] | None = None
        """Window starts dropped since the last delta (when tracking changes)."""

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
            tracking = self._dropped is not None
            self._by_start[start] = pane = Pane(self.dtypes, tracking=tracking)
        return pane

    def drop(self, start: int) -> None:
        if self._by_start.pop(start, None) is not None and self._dropped is not None:
            self._dropped.append(start)

    def track_changes(self) -> None:
        """Start marking changed rows and dropped panes, for :meth:`delta_copy`."""
        if self._dropped is None:
            self._dropped = []
            for pane in self._by_start.values():
                pane.dirty = np.zeros(len(pane), bool)

    def take_dropped(self) -> tuple[int, ...]:
        """The window starts dropped since the last call (then forgets them)."""
        if self._dropped is None:
            raise RuntimeError("the panes do not track changes: call track_changes() first")
        dropped, self._dropped = tuple(self._dropped), []
        return dropped

    def widen(self, column: str, dtype: np.dtype[Any]) -> None:
        """Hold ``dtype`` values of ``column`` from now on (integer panes meeting floats)."""
        if dtype == self.dtypes[column]:
            return
        for pane in self._by_start.values():
            pane.values[column].widen(dtype)
            pane.mark(slice(None))  # every row's values changed type
        self.dtypes[column] = dtype


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
