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

Incremental snapshots (``docs/incremental-checkpoints.md``): a state that
tracks changes (:meth:`KeyedState.track_changes`) records in
:attr:`KeyedState.changed` every key written or deleted since the last
:meth:`KeyedState.delta_copy`. An operator that changes a value in place, or
writes :attr:`KeyedState.values` directly, adds the key itself. A delta is
a state object of the same format holding the changed keys; a deleted key
has a null value (a tombstone), and the schema says ``cjob.state.delta``.
Restoring a base and then its deltas, oldest first, gives the state as of
the newest delta.

>>> state = KeyedState((0, 127), 128)
>>> state.put("a", [1]); state.put(7, 2)
>>> copy = state.snapshot_copy("count")
>>> state.get("a").append(99)  # mutated in place after the barrier
>>> fresh = KeyedState((0, 127), 128)
>>> fresh.restore([copy.encode()])
>>> fresh.get("a"), fresh.get(7)
([1], 2)
>>> state.track_changes()
>>> state.put("b", 3); state.put(7, None)
>>> delta = state.delta_copy("count")
>>> sorted(delta.shared), delta.deleted
(['b'], (7,))
>>> fresh.restore([delta.encode()])
>>> fresh.get("b"), fresh.get(7), fresh.get("a")
(3, None, [1])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from barrier_runtime import task_failure
from barrier_runtime.core import values
from barrier_runtime.state import key_groups, value_columns

Key = str | int | bytes

FORMAT_KEY = b"cjob.state.format"
FORMAT = b"values-1"
"""How state objects encode keys and values (``values-1``: :mod:`~barrier_runtime.core.values`)."""

CONTENT_KEY = b"cjob.state.content"
VALUES = b"values"
"""What a keyed state object holds (schema metadata ``cjob.state.content``): one step may
keep several, e.g. its values and its timers; objects without the mark hold values."""


DELTA_KEY = b"cjob.state.delta"
"""Marks a delta (schema metadata ``cjob.state.delta: 1``): changed keys, null for deleted."""


def state_schema(content: bytes, delta: bool = False) -> pa.Schema:
    metadata = {FORMAT_KEY: FORMAT}
    if content != VALUES:
        metadata[CONTENT_KEY] = content
    if delta:
        metadata[DELTA_KEY] = b"1"
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


class Copy(Protocol):
    """A keyed state's copy taken at a barrier (whole or a delta), encoded later."""

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...

    @property
    def delta(self) -> bool: ...

    @property
    def rows(self) -> int: ...

    def encode(self) -> bytes: ...


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
        """Key to value (never ``None``). Operators may read and write it directly (and then
        add the key to :attr:`changed`)."""
        self.changed: set[Key] | None = None
        """Keys written or deleted since the last :meth:`delta_copy`, once
        :meth:`track_changes` was called (``None`` until then: a loop that writes
        :attr:`values` checks it once, not per record)."""

    def track_changes(self) -> None:
        """Start recording changed keys, for :meth:`delta_copy` (incremental snapshots)."""
        if self.changed is None:
            self.changed = set()

    def mark(self, key: Key) -> None:
        """Note that ``key``'s value changed in place (when tracking changes)."""
        if self.changed is not None:
            self.changed.add(key)

    def get(self, key: Key) -> Any:
        return self.values.get(key)

    def put(self, key: Key, value: Any) -> None:
        if value is None:
            self.values.pop(key, None)
        else:
            self.values[key] = value
        if self.changed is not None:
            self.changed.add(key)

    def __len__(self) -> int:
        return len(self.values)

    def items(self) -> Iterable[tuple[Key, Any]]:
        return self.values.items()

    def snapshot(self, step_id: str = "?") -> bytes:
        """Serialise every key's value as Arrow IPC bytes (both parts of a snapshot at once)."""
        return self.snapshot_copy(step_id).encode()

    def snapshot_copy(self, step_id: str = "?") -> Copy:
        """The barrier's part of a snapshot: a copy that later processing cannot change.

        Values of immutable types are shared, flat containers of them (``list``,
        ``tuple``, ``set``, ``frozenset``, ``dict``) copied, every other value
        is encoded now; :class:`UnencodableStateError` (naming ``step_id``) if
        one cannot be.
        """
        return self._copy(step_id, self.values, ())

    def delta_copy(self, step_id: str = "?") -> Copy:
        """The keys changed since the last delta (deleted ones as tombstones); forgets them.

        Needs :meth:`track_changes`. Taken at the barrier, like :meth:`snapshot_copy`.
        """
        if self.changed is None:
            raise RuntimeError(f"step {step_id!r}: a delta needs track_changes() first")
        changed, self.changed = self.changed, set()
        held = self.values
        present = {key: held[key] for key in changed if key in held}
        deleted = tuple(key for key in changed if key not in held)
        return self._copy(step_id, present, deleted)

    def _copy(self, step_id: str, held: dict[Key, Any], deleted: tuple[Key, ...]) -> StateCopy:
        delta = held is not self.values
        if set(map(type, held.values())) <= _SHARED:
            return StateCopy(
                step_id,
                self.start,
                self.end,
                self.max_parallelism,
                dict(held),
                {},
                self.content,
                deleted,
                delta,
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
            step_id,
            self.start,
            self.end,
            self.max_parallelism,
            shared,
            encoded,
            self.content,
            deleted,
            delta,
        )

    def restore(self, blobs: Iterable[bytes]) -> None:
        """Load the rows of ``blobs`` that fall into this subtask's key-group range.

        ``blobs`` in the order they were taken: a base, then its deltas, whose
        tombstones delete. Restored keys do not count as changed.
        """
        held = self.values
        for blob in blobs:
            table = read_table(blob)
            groups = table.column("key_group")
            mine = pc.and_(pc.greater_equal(groups, self.start), pc.less_equal(groups, self.end))
            table = table.filter(mine)
            column = table.column("value")
            keys = value_columns.decode_column(table.column("key"))
            if not column.null_count:
                held.update(zip(keys, value_columns.decode_column(column), strict=True))
                continue
            present = pc.is_valid(column)
            kept = iter(value_columns.decode_column(column.filter(present)))
            for key, valid in zip(keys, present.to_pylist(), strict=True):
                if valid:
                    held[key] = next(kept)
                else:
                    held.pop(key, None)


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
    deleted: tuple[Key, ...] = ()
    """Keys deleted since the previous delta (a delta's tombstones)."""
    delta: bool = False
    """Whether this holds only the keys changed since the previous delta."""

    @property
    def rows(self) -> int:
        return len(self.shared) + len(self.encoded) + len(self.deleted)

    def encode(self) -> bytes:
        """The state object's bytes (:class:`MisroutedKeyError` if a key is out of range)."""
        keys = [*self.shared, *self.encoded, *self.deleted]
        key_ints = value_columns.int64s(keys)
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
        key_column = value_columns.encode_column(keys, key_ints)
        shared_values = value_columns.encode_column(list(self.shared.values()))
        value_column = pa.concat_arrays(
            [
                shared_values,
                pa.array(list(self.encoded.values()), type=pa.binary()),
                pa.nulls(len(self.deleted), type=pa.binary()),
            ]
        )
        # Key groups are < 32768 (the largest max_parallelism): a stable int16 sort is a
        # radix sort, several times faster than sorting int64.
        order = pa.array(np.argsort(groups.astype(np.int16), kind="stable"))
        schema = state_schema(self.content, self.delta)
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


def _flat_dict(value: dict[Any, Any]) -> bool:
    return set(map(type, value)) <= _SHARED and set(map(type, value.values())) <= _SHARED


def _encode(step_id: str, key: Any, value: Any) -> bytes:
    try:
        return values.encode(value)
    except values.UnencodableValueError as exc:
        raise UnencodableStateError(
            f"step {step_id!r} cannot snapshot its state for key {key!r}: {exc}"
        ) from exc
