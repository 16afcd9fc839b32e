"""Snapshots of window panes: whole copies, the deltas of incremental checkpoints, and
restoring from both.

:class:`PanesCopy` is the panes as of a barrier (arrays copied); its
:meth:`~PanesCopy.encode` writes one Arrow table in the keyed-state format
(content mark ``window-slots``): key group, key (value codec), window start,
count, fired, and ``<column>:count``, ``:sum``, ``:min``, ``:max`` per value
column, sorted by key group, so a restore at any parallelism takes the rows of
its key groups. :class:`PanesState` gives the panes the interface snapshots
use; its deltas hold the rows changed since the previous one, and in the
schema metadata the windows dropped meanwhile and the subtask's key-group range.

:func:`decode` loads the rows of a key-group range, object after object in the
order they were taken. A whole object's rows merge into the panes (a restore at
another parallelism reads several, with disjoint keys). A delta first removes
the panes its subtask dropped (only the keys of that subtask's key groups:
others may still hold the same window), then puts its rows in place of the
ones the panes hold. Tables written before several aggregates (one value
column, unnamed: ``count``, ``sum``, ``min``, ``max``, ``fired``; float64 sums
before int64) are read into the step's one column.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from barrier_runtime.state import key_groups, keyed, value_columns, window_panes


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
    return pa.schema(
        fields, metadata={keyed.FORMAT_KEY: keyed.FORMAT, keyed.CONTENT_KEY: window_panes.CONTENT}
    )


@dataclasses.dataclass(frozen=True, slots=True)
class PanesCopy:
    """The live panes as of a barrier (arrays copied); encoded later, on the upload thread."""

    dtypes: Mapping[str, np.dtype[Any]]
    max_parallelism: int
    parts: tuple[tuple[int, pa.Array, dict[str, window_panes.Values]], ...]
    start: int = 0
    end: int = 0
    """The key-group range of the subtask it was copied on (inclusive)."""
    delta: bool = False
    """Whether it holds only what changed since the previous delta."""
    dropped: tuple[int, ...] = ()
    """A delta's window starts dropped since the previous one."""

    @property
    def rows(self) -> int:
        return sum(len(keys) for _, keys, _ in self.parts) + len(self.dropped)

    @staticmethod
    def of(panes: window_panes.Panes, max_parallelism: int) -> PanesCopy:
        parts = []
        for start, pane in panes.items():
            if pane.keys is None or not len(pane):
                continue
            # Arrow arrays are immutable: the keys are shared
            parts.append((start, pane.keys, _arrays(pane, slice(None))))
        return PanesCopy(dict(panes.dtypes), max_parallelism, tuple(parts), panes.start, panes.end)

    def encode(self) -> bytes:
        target = schema(self.dtypes)
        if self.delta:
            target = target.with_metadata(
                {
                    **(target.metadata or {}),
                    keyed.DELTA_KEY: b"1",
                    window_panes.DROPPED_KEY: json.dumps(list(self.dropped)).encode(),
                    window_panes.RANGE_KEY: f"{self.start},{self.end}".encode(),
                }
            )
        tables = [self._table(start, keys, arrays, target) for start, keys, arrays in self.parts]
        table = pa.concat_tables(tables) if tables else target.empty_table()
        table = table.sort_by("key_group")
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, target, options=keyed.IPC_OPTIONS) as writer:
            writer.write_table(table)
        return bytes(sink.getvalue().to_pybytes())

    def _table(
        self, start: int, keys: pa.Array, arrays: dict[str, window_panes.Values], target: pa.Schema
    ) -> pa.Table:
        columns: dict[str, Any] = {
            "key_group": key_groups.key_groups_of(keys, self.max_parallelism).astype(np.int32),
            "key": value_columns.encode_column(keys.to_pylist()),
            "start": np.full(len(keys), start, np.int64),
        }
        columns.update(arrays)
        return pa.table(columns, schema=target)


def _arrays(
    pane: window_panes.Pane, rows: npt.NDArray[Any] | slice
) -> dict[str, window_panes.Values]:
    """Copies of the pane's per-row arrays (of ``rows``), by their snapshot column names."""
    arrays = {"count": pane.count[rows].copy(), "fired": pane.fired[rows].copy()}
    for column, aggregates in pane.values.items():
        for name in window_panes.AGGREGATES:
            arrays[f"{column}:{name}"] = getattr(aggregates, name)[rows].copy()
    return arrays


class PanesState:
    """The panes as a keyed state that snapshots copy, whole or as a delta (see
    :func:`~barrier_runtime.task.operators.base.add_keyed_state`)."""

    def __init__(self, panes: window_panes.Panes) -> None:
        self.panes = panes
        self.start, self.end = panes.start, panes.end

    def track_changes(self) -> None:
        self.panes.track_changes()

    def snapshot_copy(self, step_id: str = "?") -> PanesCopy:
        """Every pane as of now (arrays copied), to encode on the upload thread."""
        return PanesCopy.of(self.panes, self.panes.max_parallelism)

    def delta_copy(self, step_id: str = "?") -> PanesCopy:
        """The rows changed and the panes dropped since the last delta (then forgets them)."""
        panes = self.panes
        dropped = panes.take_dropped()
        parts = []
        for start, pane in panes.items():
            dirty = pane.dirty
            if pane.keys is None or dirty is None or not dirty.any():
                continue
            rows = np.flatnonzero(dirty)
            dirty[:] = False
            parts.append((start, pane.keys.take(pa.array(rows)), _arrays(pane, rows)))
        return PanesCopy(
            dict(panes.dtypes),
            panes.max_parallelism,
            tuple(parts),
            panes.start,
            panes.end,
            delta=True,
            dropped=dropped,
        )


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
    panes: window_panes.Panes,
    legacy: str | None = None,
) -> None:
    """Load the rows of ``key_group_range`` from snapshot blobs into ``panes``, in order.

    ``legacy``: the value column a table written before several aggregates holds.
    """
    lo, hi = key_group_range
    for blob in blobs:
        table = keyed.read_table(blob)
        metadata = table.schema.metadata or {}
        delta = metadata.get(keyed.DELTA_KEY) == b"1"
        if delta:
            _drop(panes, metadata)
        groups = table.column("key_group").to_numpy()
        table = table.take(pa.array(np.flatnonzero((groups >= lo) & (groups <= hi))))
        if not table.num_rows:
            continue
        keys = pa.array(value_columns.decode_column(table.column("key")))
        starts = table.column("start").to_numpy()
        counts = table.column("count").to_numpy()
        fired = table.column("fired").to_numpy()
        values = {c: _column_partials(table, c, dtype, legacy) for c, dtype in panes.dtypes.items()}
        for start in np.unique(starts).tolist():
            rows = np.flatnonzero(starts == start)
            partials = window_panes.Partials(
                counts[rows], {c: v.take(rows) for c, v in values.items() if v is not None}
            )
            pane = panes.pane(int(start))
            if delta:
                pane.replace(keys.take(pa.array(rows)), partials, fired[rows])
            else:
                where = pane.merge(keys.take(pa.array(rows)), partials)
                pane.fired[where] = fired[rows]


def _drop(panes: window_panes.Panes, metadata: dict[bytes, bytes]) -> None:
    """Remove from ``panes`` the keys of the windows a delta's subtask dropped (only the
    keys of that subtask's key groups: another subtask may not have dropped its own yet)."""
    dropped = json.loads(metadata.get(window_panes.DROPPED_KEY, b"[]"))
    if not dropped:
        return
    low, high = (int(x) for x in metadata[window_panes.RANGE_KEY].split(b","))
    for start in dropped:
        pane = panes.get(int(start))
        if pane is None or pane.keys is None:
            continue
        groups = key_groups.key_groups_of(pane.keys, panes.max_parallelism)
        pane.keep((groups < low) | (groups > high))
        if not len(pane):
            panes.drop(int(start))


def _column_partials(
    table: pa.Table, column: str, dtype: np.dtype[Any], legacy: str | None
) -> window_panes.ValuePartials | None:
    names = {name: _value_field(table, column, name, legacy) for name in window_panes.AGGREGATES}
    if any(name is None for name in names.values()):
        return None
    lowest, highest = window_panes.identities(dtype)

    def read(name: str) -> window_panes.Values:
        field = names[name]
        assert field is not None
        return np.asarray(table.column(field).to_numpy())

    return window_panes.ValuePartials(
        np.asarray(read("count"), np.int64),
        _as(read("sum"), dtype, 0),
        _as(read("min"), dtype, highest),
        _as(read("max"), dtype, lowest),
    )


def _as(values: window_panes.Values, dtype: np.dtype[Any], empty: Any) -> window_panes.Values:
    """``values`` as ``dtype``; a non-finite float (an old table's empty min or max): ``empty``."""
    if values.dtype == dtype:
        return values
    if values.dtype.kind == "f" and dtype.kind != "f":
        finite = np.isfinite(values)
        out = np.where(finite, values, 0).astype(dtype)
        out[~finite] = empty
        return out
    return values.astype(dtype)
