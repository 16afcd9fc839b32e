"""Columnar session state: every open session of one subtask, as aligned arrays.

A session is one row: its key (one Arrow array for all rows), ``start`` and
``end`` (``[start, end)`` in ms), the number of records, how many times its
result was emitted (``fired``) and, per value column the step reads, the
count of values, their sum, min and max (``<column>:count``, ``:sum``,
``:min``, ``:max``). Rows are in no particular order; a key's sessions never
overlap or touch (they would have merged).

:func:`merge_sessions` is the whole merge of a batch: the batch's records,
each a one-record session ``[t, t + gap)``, and the open sessions of their
keys, sorted by ``(key, start)``, are cut where a key changes or a start lies
past every end before it in the key (a session *touching* another merges
with it, as :func:`~barrier_runtime.api.windows.merge_session` says); each run
is reduced to one session with NumPy ``reduceat``. Nothing is done per record
or per key in Python.

>>> rows = Columns({"start": np.array([0, 30, 8]), "end": np.array([10, 40, 31])})
>>> keys = pa.array(["a", "a", "a"])
>>> merged_keys, merged = merge_sessions(keys, rows, {"start": "first", "end": "max"})
>>> merged_keys.to_pylist(), merged["start"].tolist(), merged["end"].tolist()
(['a'], [0], [40])

Snapshots
    :meth:`SessionsCopy.encode` writes the sessions as one Arrow table in the
    keyed-state format (content mark ``session-slots``): key group, key (value
    codec), then every array; a restore at any parallelism takes the rows of
    its key groups (:func:`decode`). The delta of an incremental checkpoint
    holds every live session of the keys whose sessions changed, and a row
    with ``deleted`` set for each such key left without one; restoring it
    replaces all sessions of those keys.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from barrier_runtime.state import key_groups, keyed, value_columns, window_panes

CONTENT = b"session-slots"
Values = npt.NDArray[Any]
Columns = dict[str, Values]
Reduce = Literal["first", "sum", "min", "max"]
"""How a column of a merged run is reduced."""

_REDUCERS: dict[Reduce, Any] = {"sum": np.add, "min": np.minimum, "max": np.maximum}


def reducers(columns: Iterable[str]) -> dict[str, Reduce]:
    """How each array of a session merges, for the value ``columns``."""
    how: dict[str, Reduce] = {"start": "first", "end": "max", "count": "sum", "fired": "max"}
    for column in columns:
        how |= {f"{column}:count": "sum", f"{column}:sum": "sum"}
        how |= {f"{column}:min": "min", f"{column}:max": "max"}
    return how


def merge_sessions(
    keys: pa.Array, rows: Mapping[str, Values], how: Mapping[str, Reduce]
) -> tuple[pa.Array, Columns]:
    """The sessions ``rows`` (of ``keys``) form once every overlapping or touching pair of
    the same key has merged; each array reduced as ``how`` says. Results in (key, start)
    order."""
    starts, ends = rows["start"], rows["end"]
    order = pc.sort_indices(
        pa.table({"k": keys, "s": starts}), sort_keys=[("k", "ascending"), ("s", "ascending")]
    )
    sorted_keys = keys.take(order)
    order_np = order.to_numpy()
    s, e = starts[order_np], ends[order_np]
    n = len(s)
    new_key = np.ones(n, dtype=bool)
    if n > 1:
        differs = pc.not_equal(sorted_keys[1:], sorted_keys[:-1]).fill_null(True)
        new_key[1:] = np.asarray(differs.to_numpy(zero_copy_only=False), dtype=bool)
    cuts = _cuts(new_key, s, e)
    merged = {name: _reduce(how[name], values[order_np], cuts) for name, values in rows.items()}
    return sorted_keys.take(pa.array(cuts)), merged


def _cuts(new_key: npt.NDArray[np.bool_], s: Values, e: Values) -> npt.NDArray[np.intp]:
    """Where runs begin: a new key, or a start past the running end of its key."""
    n = len(s)
    if n == 0:
        return np.zeros(0, np.intp)
    code = np.cumsum(new_key) - 1
    base = int(s.min())
    s0, e0 = (s - base).astype(np.int64), (e - base).astype(np.int64)
    span = int(e0.max()) + 1
    if (int(code[-1]) + 1) * span < 2**62:
        # The running end of each key without a Python loop: offset each key's ends by
        # code * span, so one running maximum never carries an end into the next key.
        running = np.maximum.accumulate(code * span + e0)
        breaks = new_key.copy()
        breaks[1:] |= code[1:] * span + s0[1:] > running[:-1]
        return np.flatnonzero(breaks)
    breaks = new_key.copy()  # times too far apart for the offsets: key by key
    firsts = np.flatnonzero(new_key)
    for lo, hi in zip(firsts, [*firsts[1:], n], strict=True):
        running = np.maximum.accumulate(e0[lo:hi])
        breaks[lo + 1 : hi] |= s0[lo + 1 : hi] > running[:-1]
    return np.flatnonzero(breaks)


def _reduce(how: Reduce, values: Values, cuts: npt.NDArray[np.intp]) -> Values:
    if not len(cuts):
        return values[:0]
    if how == "first":
        return values[cuts]
    out: Values = _REDUCERS[how].reduceat(values, cuts)
    return out


def concat(a: Mapping[str, Values], b: Mapping[str, Values]) -> Columns:
    """``a``'s rows then ``b``'s (``b``'s arrays converted to ``a``'s dtypes)."""
    return {
        name: np.concatenate([values, b[name].astype(values.dtype)]) for name, values in a.items()
    }


def empty(columns: Iterable[str], dtypes: Mapping[str, np.dtype[Any]]) -> Columns:
    """No session; value arrays of ``dtypes`` (per value column)."""
    out: Columns = {name: np.zeros(0, np.int64) for name in ("start", "end", "count", "fired")}
    for column in columns:
        dtype = dtypes[column]
        out[f"{column}:count"] = np.zeros(0, np.int64)
        for name in ("sum", "min", "max"):
            out[f"{column}:{name}"] = np.zeros(0, dtype)
    return out


def widen(columns: Columns, column: str, dtype: np.dtype[Any]) -> None:
    """Hold ``dtype`` values of ``column`` from now on (integer sessions meeting floats)."""
    if columns[f"{column}:sum"].dtype == dtype:
        return
    none = columns[f"{column}:count"] == 0
    lowest, highest = window_panes.identities(dtype)
    columns[f"{column}:sum"] = columns[f"{column}:sum"].astype(dtype)
    columns[f"{column}:min"] = np.where(none, highest, columns[f"{column}:min"]).astype(dtype)
    columns[f"{column}:max"] = np.where(none, lowest, columns[f"{column}:max"]).astype(dtype)


# -- snapshots --------------------------------------------------------------------------


def schema(columns: Mapping[str, Values]) -> pa.Schema:
    fields = [("key_group", pa.int32()), ("key", pa.binary())]
    fields += [(name, pa.from_numpy_dtype(values.dtype)) for name, values in columns.items()]
    return pa.schema(fields, metadata={keyed.FORMAT_KEY: keyed.FORMAT, keyed.CONTENT_KEY: CONTENT})


@dataclasses.dataclass(frozen=True, slots=True)
class SessionsCopy:
    """The open sessions as of a barrier (copies of the arrays); encoded later, on the upload
    thread."""

    keys: pa.Array | None
    columns: Columns
    max_parallelism: int
    start: int = 0
    end: int = 0
    """The key-group range of the subtask it was copied on (inclusive)."""
    delta: bool = False
    """Whether it holds only the keys whose sessions changed since the previous delta."""
    deleted: pa.Array | None = None
    """A delta's keys left without a session."""

    @property
    def rows(self) -> int:
        return sum(0 if k is None else len(k) for k in (self.keys, self.deleted))

    def encode(self) -> bytes:
        target = schema(self.columns)
        keys, columns = self.keys, dict(self.columns)
        if self.delta:
            target = target.append(pa.field(DELETED, pa.bool_())).with_metadata(
                {**(target.metadata or {}), keyed.DELTA_KEY: b"1"}
            )
            keys, columns = _with_deleted(keys, columns, self.deleted)
        if keys is None or not len(keys):
            table = target.empty_table()
        else:
            data: dict[str, Any] = {
                "key_group": key_groups.key_groups_of(keys, self.max_parallelism).astype(np.int32),
                "key": value_columns.encode_column(keys.to_pylist()),
            }
            data.update(columns)
            table = pa.table(data, schema=target).sort_by("key_group")
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, target, options=keyed.IPC_OPTIONS) as writer:
            writer.write_table(table)
        return bytes(sink.getvalue().to_pybytes())


def _with_deleted(
    keys: pa.Array | None, columns: Columns, deleted: pa.Array | None
) -> tuple[pa.Array | None, Columns]:
    """The rows of a delta: its sessions (``deleted`` false), then a row per deleted key."""
    live = 0 if keys is None else len(keys)
    gone = 0 if deleted is None else len(deleted)
    out = {name: np.concatenate([v, np.zeros(gone, v.dtype)]) for name, v in columns.items()}
    out[DELETED] = np.concatenate([np.zeros(live, bool), np.ones(gone, bool)])
    parts = [k for k in (keys, deleted) if k is not None and len(k)]
    if len(parts) == 2 and parts[1].type != parts[0].type:
        parts[1] = parts[1].cast(parts[0].type)
    return (pa.concat_arrays(parts) if parts else keys), out


DELETED = "deleted"
"""A delta's column: the row only says its key has no session left."""


@dataclasses.dataclass(frozen=True, slots=True)
class Restored:
    """The rows of one snapshot object in a key-group range."""

    keys: list[Any]
    columns: Columns
    delta: bool = False
    """Its keys' sessions replace all sessions of those keys (else they are added)."""
    deleted: list[Any] = dataclasses.field(default_factory=list)
    """Keys whose sessions are all gone (a delta's)."""


def decode(blobs: Iterable[bytes], key_group_range: tuple[int, int]) -> list[Restored]:
    """Per blob, in order, its rows in ``key_group_range`` (blobs with none are skipped)."""
    lo, hi = key_group_range
    out = []
    for blob in blobs:
        table = keyed.read_table(blob)
        delta = (table.schema.metadata or {}).get(keyed.DELTA_KEY) == b"1"
        groups = table.column("key_group").to_numpy()
        table = table.take(pa.array(np.flatnonzero((groups >= lo) & (groups <= hi))))
        if not table.num_rows:
            continue
        deleted: list[Any] = []
        if delta:
            gone = table.column(DELETED)
            deleted = value_columns.decode_column(table.filter(gone).column("key"))
            table = table.filter(pc.invert(gone)).drop_columns([DELETED])
        arrays = {
            name: np.asarray(table.column(name).to_numpy())
            for name in table.schema.names
            if name not in ("key_group", "key")
        }
        keys = value_columns.decode_column(table.column("key")) if table.num_rows else []
        out.append(Restored(keys, arrays, delta, deleted))
    return out
