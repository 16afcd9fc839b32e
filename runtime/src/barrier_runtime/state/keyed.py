"""Keyed value state of one step in one subtask: one flat dict of key to value.

Processing never hashes a key: :meth:`KeyedState.get` and
:meth:`KeyedState.put` are dict operations. Key groups are computed only
where they matter, at a snapshot (vectorised for integer keys, cached for
strings and bytes: :func:`~barrier_runtime.state.key_groups.key_groups_for_keys`)
and on restore (read from the stored column). A key outside the subtask's
key-group range means records were routed to the wrong subtask; the snapshot
fails with :class:`MisroutedKeyError` saying so.

A snapshot is taken in two parts. At the barrier, on the task thread,
:meth:`KeyedState.snapshot_copy` takes a :class:`StateCopy`: a shallow copy
of the dict, sharing values of immutable types (``int``, ``float``, ``str``,
``bytes``, ``bool``) and encoding every other value right away, so that a
value the user's function mutates in place later cannot leak into the
snapshot. :meth:`StateCopy.encode` then serialises the copy, on the upload
thread, into an Arrow IPC stream (ZSTD buffers) with columns ``key_group`` (int32),
``key`` and ``value`` (bytes of :mod:`~barrier_runtime.core.values`, the
data-only value codec: nothing read back can run code), sorted by key group
and marked with :data:`FORMAT` in the schema's metadata. Integer keys and
values take a vectorised encoding that gives the codec's bytes exactly.
Keys and values may be any value that codec holds (see
``docs/state-values.md``); anything else fails the snapshot with the step's
name and what to do. A state object without the mark (the pickle format of
older releases) is refused with :class:`StateFormatError`.

A restore reads every handle whose range overlaps the subtask's own range
and keeps only the rows in that range, which is how a checkpoint taken at
one parallelism is restored at another.

>>> state = KeyedState((0, 127), 128)
>>> state.put("a", [1]); state.put(7, 2)
>>> copy = state.snapshot_copy("count")
>>> state.get("a").append(99)  # mutated in place after the barrier
>>> fresh = KeyedState((0, 127), 128)
>>> fresh.restore([copy.encode()])
>>> fresh.get("a"), fresh.get(7)
([1], 2)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from barrier_runtime import task_failure
from barrier_runtime.core import json_text, values
from barrier_runtime.state import key_groups

Key = str | int | bytes

FORMAT_KEY = b"cjob.state.format"
FORMAT = b"values-1"
"""How state objects encode keys and values (``values-1``: :mod:`~barrier_runtime.core.values`)."""

CONTENT_KEY = b"cjob.state.content"
VALUES = b"values"
"""What a keyed state object holds (schema metadata ``cjob.state.content``): one step may
keep several, e.g. its values and its timers; objects without the mark hold values."""


def _schema(content: bytes) -> pa.Schema:
    metadata = {FORMAT_KEY: FORMAT}
    if content != VALUES:
        metadata[CONTENT_KEY] = content
    return pa.schema(
        [("key_group", pa.int32()), ("key", pa.binary()), ("value", pa.binary())],
        metadata=metadata,
    )


IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression=pa.Codec("zstd", 1))
"""How every state object is written: Arrow IPC with ZSTD level 1 buffers (readers need no
option). Values of this codec compress 2-5x, in about 30 ns per row."""

_SHARED = frozenset({int, float, str, bytes, bool})
"""Value types a snapshot copy may share with the live state: immutable, always encodable."""
_FLAT_CONTAINERS = frozenset({list, tuple, set, frozenset})
"""Containers copied (or, if immutable, shared) at the barrier when they hold only shared types."""


class StateFormatError(ValueError):
    """A state object is not in a format this runtime reads (e.g. the old pickle format)."""


class UnencodableStateError(task_failure.PermanentFailure, TypeError):
    """A keyed step holds a key or value that state snapshots cannot store."""


class MisroutedKeyError(KeyError):
    """A state holds a key outside its key-group range: records were routed to the wrong subtask."""


def read_table(blob: bytes) -> pa.Table:
    """The Arrow table of a state object, after checking its format mark."""
    try:
        table = pa.ipc.open_stream(pa.py_buffer(blob)).read_all()
    except (pa.ArrowException, ValueError) as exc:
        raise StateFormatError(f"state object is not an Arrow IPC stream: {exc}") from exc
    check_format(table.schema.metadata)
    return table


def content_of(blob: bytes) -> bytes:
    """What the keyed state object ``blob`` holds (``VALUES`` unless marked otherwise)."""
    try:
        schema = pa.ipc.open_stream(pa.py_buffer(blob)).schema
    except (pa.ArrowException, ValueError) as exc:
        raise StateFormatError(f"state object is not an Arrow IPC stream: {exc}") from exc
    content: bytes = (schema.metadata or {}).get(CONTENT_KEY, VALUES)
    return content


def check_format(metadata: Mapping[bytes, bytes] | None) -> None:
    found = (metadata or {}).get(FORMAT_KEY)
    if found != FORMAT:
        raise StateFormatError(
            f"state object has format {found!r}, this runtime reads {FORMAT!r}: it was written "
            "by an older release (pickled keys and values); restore it with that release"
        )


class KeyedState:
    """One value per key, for the keys in ``[start, end]`` key groups."""

    def __init__(
        self, key_group_range: tuple[int, int], max_parallelism: int, content: bytes = VALUES
    ) -> None:
        """``content``: the mark its snapshots carry, when a step keeps more than one."""
        self.start, self.end = key_group_range
        self.max_parallelism = max_parallelism
        self.content = content
        self.values: dict[Key, Any] = {}
        """Key to value (never ``None``). Operators may read and write it directly."""

    def get(self, key: Key) -> Any:
        return self.values.get(key)

    def put(self, key: Key, value: Any) -> None:
        if value is None:
            self.values.pop(key, None)
        else:
            self.values[key] = value

    def __len__(self) -> int:
        return len(self.values)

    def items(self) -> Iterable[tuple[Key, Any]]:
        return self.values.items()

    def snapshot(self, step_id: str = "?") -> bytes:
        """Serialise every key's value as Arrow IPC bytes (both parts of a snapshot at once)."""
        return self.snapshot_copy(step_id).encode()

    def snapshot_copy(self, step_id: str = "?") -> StateCopy:
        """The barrier's part of a snapshot: a copy that later processing cannot change.

        Values of immutable types are shared, flat containers of them (``list``,
        ``tuple``, ``set``, ``frozenset``, ``dict``) copied, every other value
        is encoded now; :class:`UnencodableStateError` (naming ``step_id``) if
        one cannot be.
        """
        held = self.values
        if set(map(type, held.values())) <= _SHARED:
            return StateCopy(
                step_id, self.start, self.end, self.max_parallelism, dict(held), {}, self.content
            )
        shared: dict[Key, Any] = {}
        encoded: dict[Key, bytes] = {}
        for key, value in held.items():
            kind = type(value)
            if kind in _SHARED:
                shared[key] = value
            elif kind in _FLAT_CONTAINERS and set(map(type, value)) <= _SHARED:
                shared[key] = value if kind is tuple or kind is frozenset else kind(value)
            elif kind is dict and _flat_dict(value):
                shared[key] = dict(value)
            else:
                encoded[key] = _encode(step_id, key, value)
        return StateCopy(
            step_id, self.start, self.end, self.max_parallelism, shared, encoded, self.content
        )

    def restore(self, blobs: Iterable[bytes]) -> None:
        """Load the rows of ``blobs`` that fall into this subtask's key-group range."""
        for blob in blobs:
            table = read_table(blob)
            groups = table.column("key_group")
            mine = pc.and_(pc.greater_equal(groups, self.start), pc.less_equal(groups, self.end))
            table = table.filter(mine)
            keys = decode_column(table.column("key"))
            self.values.update(zip(keys, decode_column(table.column("value")), strict=True))


@dataclass(frozen=True, slots=True)
class StateCopy:
    """A keyed state as of a barrier, ready to be serialised on another thread."""

    step_id: str
    start: int
    end: int
    max_parallelism: int
    shared: dict[Key, Any]
    """Keys whose values later processing cannot change (immutable and shared, or copied)."""
    encoded: dict[Key, bytes]
    """Keys whose values were encoded at the barrier."""
    content: bytes = VALUES

    def encode(self) -> bytes:
        """The state object's bytes (:class:`MisroutedKeyError` if a key is out of range)."""
        keys = [*self.shared, *self.encoded]
        key_ints = _int64s(keys)
        try:
            if key_ints is not None:
                hashes = key_groups.stable_hash_int64(key_ints)
                groups = (hashes % np.uint64(self.max_parallelism)).astype(np.int64)
            else:
                groups = key_groups.key_groups_for_keys(keys, self.max_parallelism)
        except TypeError as exc:
            raise UnencodableStateError(
                f"step {self.step_id!r} cannot snapshot its state: {exc}"
            ) from exc
        outside = np.flatnonzero((groups < self.start) | (groups > self.end))
        if len(outside):
            key = keys[int(outside[0])]
            raise MisroutedKeyError(
                f"step {self.step_id!r} holds key {key!r} of key group {groups[outside[0]]}, "
                f"outside its range [{self.start}, {self.end}]: records were routed to the "
                "wrong subtask"
            )
        key_column = encode_column(keys, key_ints)
        shared_values = encode_column(list(self.shared.values()))
        value_column = pa.concat_arrays(
            [shared_values, pa.array(list(self.encoded.values()), type=pa.binary())]
        )
        # Key groups are < 32768 (the largest max_parallelism): a stable int16 sort is a
        # radix sort, several times faster than sorting int64.
        order = pa.array(np.argsort(groups.astype(np.int16), kind="stable"))
        schema = _schema(self.content)
        table = pa.table(
            {
                "key_group": pa.array(groups.astype(np.int32)).take(order),
                "key": key_column.take(order),
                "value": value_column.take(order),
            },
            schema=schema,
        )
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, schema, options=IPC_OPTIONS) as writer:
            writer.write_table(table)
        return bytes(sink.getvalue().to_pybytes())


def _int64s(items: list[Any]) -> npt.NDArray[np.int64] | None:
    """``items`` as an int64 array when every item is an ``int`` (not a ``bool``) that fits."""
    if not items or set(map(type, items)) != {int}:
        return None
    try:
        return np.fromiter(items, dtype=np.int64, count=len(items))
    except OverflowError:
        return None


def encode_column(items: list[Any], ints: npt.NDArray[np.int64] | None = None) -> pa.Array:
    """The value-codec bytes of every item (all of them encodable), as a binary array.

    All-``int`` items in 64 bits take Arrow's decimal formatting, which is the
    codec's encoding of an ``int``, and all-``str`` items that JSON writes as they are
    (printable ASCII without ``"`` or ``\\``) are quoted by Arrow. ``ints``: the
    items as int64, when the caller already converted them (saves a second pass).

    >>> ints = [0, -7, 2**63 - 1, -(2**63)]
    >>> encode_column(ints).to_pylist() == [values.encode(i) for i in ints]
    True
    >>> encode_column(["k1", "a b"]).to_pylist()
    [b'"k1"', b'"a b"']
    """
    if ints is None:
        ints = _int64s(items)
    column: pa.Array | None = None
    if ints is not None:
        column = pa.array(ints, type=pa.int64())
    elif set(map(type, items)) == {str}:
        column = pa.array(items, type=pa.string())
    text = None if column is None else json_text.column_text(column)
    if text is not None:
        return pc.cast(text, pa.binary())
    encode = values.encode
    return pa.array([encode(v) for v in items], type=pa.binary())


def decode_column(column: pa.ChunkedArray | pa.Array) -> list[Any]:
    """The values of a column of value-codec bytes (``values.decode`` of each).

    A column of canonical decimal integers (as :func:`encode_column` writes
    them) is parsed by Arrow in one pass; anything else is decoded one by one.

    >>> decode_column(encode_column([3, -12, 0]))
    [3, -12, 0]
    >>> decode_column(encode_column(["k1", "a b"]))
    ['k1', 'a b']
    >>> decode_column(pa.array([b"[1]", b"2"]))  # not all ints: decoded one by one
    [[1], 2]
    """
    text = _as_text(column) if len(column) and not column.null_count else None
    if text is not None:
        if pc.all(pc.match_substring_regex(text, json_text.QUOTED_PLAIN_STRING)).as_py():
            return list(pc.utf8_slice_codeunits(text, 1, -1).to_pylist())
        try:
            ints = pc.cast(text, pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        else:
            if pc.all(pc.equal(pc.cast(ints, pa.string()), text)).as_py():
                return list(ints.to_pylist())
    decode = values.decode
    return [decode(b) for b in column.to_pylist()]


def _as_text(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array | None:
    try:
        return column.cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None  # not UTF-8: not a column the fast paths read


def _flat_dict(value: dict[Any, Any]) -> bool:
    return set(map(type, value)) <= _SHARED and set(map(type, value.values())) <= _SHARED


def _encode(step_id: str, key: Any, value: Any) -> bytes:
    try:
        return values.encode(value)
    except values.UnencodableValueError as exc:
        raise UnencodableStateError(
            f"step {step_id!r} cannot snapshot its state for key {key!r}: {exc}"
        ) from exc
