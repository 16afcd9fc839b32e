r"""The open sessions of one subtask, kept so that a batch costs what it touches.

Rows live in NumPy arrays with spare capacity (``start``, ``end``, ``count``,
``fired`` and the value columns' partials, see
:mod:`~barrier_runtime.state.session_windows`) and their keys in a list of
Arrow chunks. A batch *kills* the rows it merged (a flag, no copy) and
*appends* the merged sessions (a new key chunk, writes into the spare
capacity), so the arrays are not rebuilt per batch; once dead rows outnumber
live ones, or the chunks pile up, the table is compacted in one pass. Finding
a batch's keys among the open sessions is one ``is_in`` probe of the key
chunks against a hash of the batch's keys.

For incremental snapshots (:meth:`OpenSessions.track_changes`) the table
keeps the keys of every row it kills, appends or :meth:`~OpenSessions.touch`\ es;
:meth:`OpenSessions.take_changed` hands them over: a delta holds every live
session of those keys, and a key left with none.

>>> table = OpenSessions(session_windows.empty([], {}))
>>> at = table.append(pa.array(["a", "b"]), {"start": np.array([0, 5]),
...     "end": np.array([10, 15]), "count": np.array([1, 1]), "fired": np.array([0, 0])})
>>> table.kill(at[:1])
>>> table.alive_keys().to_pylist(), table.column("end")[table.alive_rows()].tolist()
(['b'], [15])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from barrier_runtime.state import session_windows

Values = npt.NDArray[Any]
_MAX_CHUNKS = 64


class OpenSessions:
    """Live and dead session rows; positions stay valid until :meth:`compact`."""

    def __init__(self, columns: session_windows.Columns) -> None:
        self._arrays = {name: values.copy() for name, values in columns.items()}
        self._alive = np.zeros(0, dtype=bool)
        self._size = 0
        self._live = 0
        self._chunks: list[pa.Array] = []
        self.key_type: pa.DataType | None = None
        self._changed: list[pa.Array] | None = None
        """Keys whose sessions changed since :meth:`take_changed` (when tracking)."""

    def __len__(self) -> int:
        """The live sessions."""
        return self._live

    @property
    def size(self) -> int:
        """Rows in use, live or dead (positions run below it)."""
        return self._size

    def column(self, name: str) -> Values:
        """The array ``name`` over every row in use (a view: writes go to the table)."""
        return self._arrays[name][: self._size]

    def names(self) -> list[str]:
        return list(self._arrays)

    def alive_rows(self) -> npt.NDArray[np.bool_]:
        return self._alive[: self._size]

    def keys(self) -> pa.ChunkedArray:
        """The keys of every row in use."""
        assert self.key_type is not None
        return pa.chunked_array(self._chunks, type=self.key_type)

    def alive_keys(self) -> pa.Array:
        return self.keys().filter(pa.array(self.alive_rows())).combine_chunks()

    def find(self, keys: pa.Array) -> npt.NDArray[np.intp]:
        """The live rows whose key is one of ``keys``."""
        if not self._live:
            return np.zeros(0, np.intp)
        found = pc.is_in(self.keys(), value_set=pc.unique(keys))
        hit = np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)
        return np.flatnonzero(hit & self.alive_rows())

    def kill(self, rows: npt.NDArray[np.intp]) -> None:
        """Mark ``rows`` (live ones) dead."""
        self.touch(rows)
        self._alive[rows] = False
        self._live -= len(rows)

    def touch(self, rows: npt.NDArray[np.intp]) -> None:
        """Note that the sessions of ``rows`` changed (when tracking changes)."""
        if self._changed is not None and len(rows):
            self._changed.append(self.keys().take(pa.array(rows)).combine_chunks())

    def track_changes(self) -> None:
        """Start keeping the keys whose sessions change, for :meth:`take_changed`."""
        if self._changed is None:
            self._changed = []

    def take_changed(self) -> pa.Array | None:
        """The distinct keys whose sessions changed since the last call (``None``: none)."""
        if self._changed is None:
            raise RuntimeError("the sessions do not track changes: call track_changes() first")
        changed, self._changed = self._changed, []
        if not changed or self.key_type is None:
            return None
        return pc.unique(pa.concat_arrays([c.cast(self.key_type) for c in changed]))

    def append(self, keys: pa.Array, rows: Mapping[str, Values]) -> npt.NDArray[np.intp]:
        """Add live sessions; their positions."""
        n = len(keys)
        if self.key_type is None:
            self.key_type = keys.type
        elif keys.type != self.key_type:
            keys = keys.cast(self.key_type)
        self._reserve(self._size + n)
        at = np.arange(self._size, self._size + n)
        for name, values in self._arrays.items():
            values[at] = rows[name]
        self._alive[at] = True
        self._chunks.append(keys)
        self._size += n
        self._live += n
        if self._changed is not None:
            self._changed.append(keys)
        if len(self._chunks) > _MAX_CHUNKS:
            self._chunks = [pa.concat_arrays(self._chunks)] if self._size else []
        return at

    def _reserve(self, size: int) -> None:
        capacity = len(self._alive)
        if size <= capacity:
            return
        grown = max(size, 2 * capacity, 64)
        for name, values in self._arrays.items():
            bigger = np.zeros(grown, values.dtype)
            bigger[:capacity] = values
            self._arrays[name] = bigger
        alive = np.zeros(grown, dtype=bool)
        alive[:capacity] = self._alive
        self._alive = alive

    def compact(self, *, force: bool = False) -> bool:
        """Drop the dead rows when they outnumber the live ones (or ``force``); whether it did
        (positions change then)."""
        dead = self._size - self._live
        if not dead or (not force and dead <= max(self._live, 1024)):
            return False
        keep = self.alive_rows()
        keys = self.alive_keys() if self._live else None
        self._arrays = {name: values[: self._size][keep] for name, values in self._arrays.items()}
        self._alive = np.ones(self._live, dtype=bool)
        self._size = self._live
        self._chunks = [keys] if keys is not None else []
        return True

    def live_copy(self) -> tuple[pa.Array | None, session_windows.Columns]:
        """The live sessions' keys and arrays, copied."""
        keep = self.alive_rows()
        arrays = {name: values[: self._size][keep] for name, values in self._arrays.items()}
        return (self.alive_keys() if self._live else None), arrays

    def widen(self, column: str, dtype: np.dtype[Any]) -> None:
        """Hold ``dtype`` values of ``column`` from now on (integer sessions meeting floats)."""
        if self._arrays[f"{column}:sum"].dtype != dtype:
            self.touch(np.flatnonzero(self.alive_rows()))  # every session's values change type
        session_windows.widen(self._arrays, column, dtype)

    def dtype(self, name: str) -> np.dtype[Any]:
        return self._arrays[name].dtype


class SessionsState:
    """Open sessions as a keyed state that snapshots copy, whole or as a delta (see
    :func:`~barrier_runtime.task.operators.base.add_keyed_state`)."""

    def __init__(
        self, table: OpenSessions, key_group_range: tuple[int, int], max_parallelism: int
    ) -> None:
        self.table = table
        self.start, self.end = key_group_range
        self.max_parallelism = max_parallelism

    def track_changes(self) -> None:
        self.table.track_changes()

    def snapshot_copy(self, step_id: str = "?") -> session_windows.SessionsCopy:
        keys, arrays = self.table.live_copy()
        return session_windows.SessionsCopy(
            keys, arrays, self.max_parallelism, self.start, self.end
        )

    def delta_copy(self, step_id: str = "?") -> session_windows.SessionsCopy:
        """The live sessions of the keys changed since the last delta, and those keys
        left with none."""
        table = self.table
        changed = table.take_changed()
        rows = np.zeros(0, np.intp)
        if changed is not None and len(table):
            hit = np.asarray(pc.is_in(table.keys(), value_set=changed).to_numpy(), dtype=bool)
            rows = np.flatnonzero(hit & table.alive_rows())
        live_keys = table.keys().take(pa.array(rows)).combine_chunks() if len(rows) else None
        deleted = None
        if changed is not None:
            alive = pc.is_in(changed, value_set=changed[:0] if live_keys is None else live_keys)
            deleted = changed.filter(pc.invert(alive))
        arrays = {name: table.column(name)[rows] for name in table.names()}
        return session_windows.SessionsCopy(
            live_keys,
            arrays,
            self.max_parallelism,
            self.start,
            self.end,
            delta=True,
            deleted=deleted,
        )
