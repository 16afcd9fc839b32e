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

Snapshots
    :func:`encode` writes the panes as one Arrow table in the keyed-state
    format (content mark ``window-slots``): key group, key (value codec),
    window start, count, fired, and ``<column>:count``, ``:sum``, ``:min``,
    ``:max`` per value column. It splits by key group, so a restore at any
    parallelism takes the rows of its key groups (:func:`decode`). Tables
    written before several aggregates (one value column, unnamed: ``count``,
    ``sum``, ``min``, ``max``, ``fired``; float64 sums before int64) are read
    into the step's one column.

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
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from barrier_runtime.state import key_groups, keyed

Ints = npt.NDArray[np.int64]
Values = npt.NDArray[Any]
CONTENT = b"window-slots"
AGGREGATES = ("count", "sum", "min", "max")


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

    __slots__ = ("count", "fired", "keys", "values")

    def __init__(self, dtypes: Mapping[str, np.dtype[Any]]) -> None:
        self.keys: pa.Array | None = None
        self.count: Ints = np.zeros(0, np.int64)
        self.fired: Ints = np.zeros(0, np.int64)
        self.values = {column: ColumnAggregates(dtype) for column, dtype in dtypes.items()}

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
        return where

    def key_order(self) -> Ints:
        """Positions in key order (the order a window's results are emitted in)."""
        if self.keys is None:
            return np.zeros(0, np.int64)
        return np.asarray(pc.sort_indices(self.keys).to_numpy(), np.int64)


class Panes:
    """The live panes of one subtask by window start; ``dtypes``: per value column."""

    def __init__(self, dtypes: Mapping[str, np.dtype[Any]]) -> None:
        self.dtypes = dict(dtypes)
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
            self._by_start[start] = pane = Pane(self.dtypes)
        return pane

    def drop(self, start: int) -> None:
        self._by_start.pop(start, None)

    def widen(self, column: str, dtype: np.dtype[Any]) -> None:
        """Hold ``dtype`` values of ``column`` from now on (integer panes meeting floats)."""
        if dtype == self.dtypes[column]:
            return
        for pane in self._by_start.values():
            pane.values[column].widen(dtype)
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


# -- snapshots --------------------------------------------------------------------------


def schema(dtypes: Mapping[str, np.dtype[Any]]) -> pa.Schema:
    fields = [
        ("key_group", pa.int32()),
        ("key", pa.binary()),
        ("start", pa.int64()),
        ("count", pa.int64()),
        ("fired", pa.int64()),
    ]
    for column in sorted(dtypes):
        value = pa.from_numpy_dtype(dtypes[column])
        fields.append((f"{column}:count", pa.int64()))
        fields += [(f"{column}:{name}", value) for name in ("sum", "min", "max")]
    return pa.schema(fields, metadata={keyed.FORMAT_KEY: keyed.FORMAT, keyed.CONTENT_KEY: CONTENT})


@dataclasses.dataclass(frozen=True, slots=True)
class PanesCopy:
    """The live panes as of a barrier (arrays copied); encoded later, on the upload thread."""

    dtypes: Mapping[str, np.dtype[Any]]
    max_parallelism: int
    parts: tuple[tuple[int, pa.Array, dict[str, Values]], ...]

    @staticmethod
    def of(panes: Panes, max_parallelism: int) -> PanesCopy:
        parts = []
        for start, pane in panes.items():
            if pane.keys is None or not len(pane):
                continue
            arrays = {"count": pane.count.copy(), "fired": pane.fired.copy()}
            for column, aggregates in pane.values.items():
                for name in AGGREGATES:
                    arrays[f"{column}:{name}"] = getattr(aggregates, name).copy()
            parts.append((start, pane.keys, arrays))  # Arrow arrays are immutable
        return PanesCopy(dict(panes.dtypes), max_parallelism, tuple(parts))

    def encode(self) -> bytes:
        target = schema(self.dtypes)
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


def _value_field(table: pa.Table, column: str, name: str, legacy: str | None) -> str | None:
    """The table's field of ``column``'s aggregate ``name`` (an old table: its unnamed one)."""
    if f"{column}:{name}" in table.schema.names:
        return f"{column}:{name}"
    if column == legacy and name in table.schema.names and "sum" in table.schema.names:
        return name
    return None


def snapshot_dtypes(
    blobs: Iterable[bytes], columns: Iterable[str], legacy: str | None
) -> dict[str, np.dtype[Any]]:
    """Per value column, the sums' dtype in snapshot blobs: float64 if any holds floats."""
    dtypes: dict[str, np.dtype[Any]] = {column: np.dtype(np.int64) for column in columns}
    for blob in blobs:
        table = keyed.read_table(blob)
        if not table.num_rows:
            continue
        for column in dtypes:
            name = _value_field(table, column, "sum", legacy)
            if name is not None and pa.types.is_floating(table.schema.field(name).type):
                dtypes[column] = np.dtype(np.float64)
    return dtypes


def decode(
    blobs: Iterable[bytes],
    key_group_range: tuple[int, int],
    panes: Panes,
    legacy: str | None = None,
) -> None:
    """Load the rows of ``key_group_range`` from snapshot blobs into ``panes``.

    ``legacy``: the value column a table written before several aggregates holds.
    """
    lo, hi = key_group_range
    for blob in blobs:
        table = keyed.read_table(blob)
        groups = table.column("key_group").to_numpy()
        table = table.take(pa.array(np.flatnonzero((groups >= lo) & (groups <= hi))))
        if not table.num_rows:
            continue
        keys = pa.array(keyed.decode_column(table.column("key")))
        starts = table.column("start").to_numpy()
        counts = table.column("count").to_numpy()
        fired = table.column("fired").to_numpy()
        values = {c: _column_partials(table, c, dtype, legacy) for c, dtype in panes.dtypes.items()}
        for start in np.unique(starts).tolist():
            rows = np.flatnonzero(starts == start)
            partials = Partials(
                counts[rows], {c: v.take(rows) for c, v in values.items() if v is not None}
            )
            where = panes.pane(int(start)).merge(keys.take(pa.array(rows)), partials)
            panes.pane(int(start)).fired[where] = fired[rows]


def _column_partials(
    table: pa.Table, column: str, dtype: np.dtype[Any], legacy: str | None
) -> ValuePartials | None:
    names = {name: _value_field(table, column, name, legacy) for name in AGGREGATES}
    if any(name is None for name in names.values()):
        return None
    lowest, highest = identities(dtype)

    def read(name: str) -> Values:
        field = names[name]
        assert field is not None
        return np.asarray(table.column(field).to_numpy())

    return ValuePartials(
        np.asarray(read("count"), np.int64),
        _as(read("sum"), dtype, 0),
        _as(read("min"), dtype, highest),
        _as(read("max"), dtype, lowest),
    )


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
