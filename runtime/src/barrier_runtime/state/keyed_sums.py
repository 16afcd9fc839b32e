"""Vectorised keyed state: one 64-bit running sum per key, held as sorted NumPy arrays.

The state of a :class:`KeyedSums` is two parallel arrays, ``keys`` (sorted;
int64 when every key is a 64-bit integer, else Python objects) and
``values`` (int64). :meth:`KeyedSums.running_sums` takes a whole batch of
keys and values and, in a few array passes, returns each record's running
sum (its key's sum so far, itself included) and updates the state:

1. sort the batch by key, *stably*, so each key's records keep their order;
2. prefix-sum the sorted values and cut the sums at key boundaries;
3. look every distinct key up in the state (binary search), inserting new
   keys with sum 0 — after checking that they belong to this key-group range;
4. add each key's stored sum to its records' sums, store the last one back,
   and scatter the sums into the batch's order.

Arithmetic is modulo 2**64 (sums wrap like int64), and integer-only, so
results never depend on how a stream was cut into batches: a replay after a
restore reproduces them bit for bit.

Snapshots follow :mod:`~barrier_runtime.state.keyed`: an Arrow IPC stream with
columns ``key_group`` (int32), ``key`` (int64, or for other key types bytes of
the data-only value codec :mod:`~barrier_runtime.core.values`) and ``value``
(int64), and the same format mark in the schema metadata; a restore keeps the
rows of its own key-group range from every overlapping blob, which is how a
checkpoint taken at one parallelism is restored at another. Taking one has two
halves: :meth:`KeyedSums.snapshot_copy` is the synchronous copy of the two
arrays (microseconds; processing then goes on), and
:meth:`SumsSnapshot.encode` builds the stream, with ZSTD-compressed buffers,
on the upload thread. The sorted int64 keys and small key groups compress
about fivefold, which is what a checkpoint costs the most for: every byte is
hashed twice by the client and stored by the S3 server. Arrow decompresses on
read, so restores read both compressed and older uncompressed snapshots.

For incremental checkpoints (:meth:`KeyedSums.track_changes`) every update
keeps the batch's distinct keys; :meth:`KeyedSums.delta_copy` copies the
sums of those keys only. Keys are never deleted, so a delta needs no
tombstones: a restore applies its objects in order and the last row of a
key wins.

>>> import numpy as np
>>> state = KeyedSums((0, 127), 128)
>>> state.running_sums(np.array([7, 9, 7]), np.array([1, 10, 2])).tolist()
[1, 10, 3]
>>> state.running_sums(np.array([9, 7]), np.array([5, 5])).tolist()
[15, 8]
>>> fresh = KeyedSums((0, 127), 128)
>>> fresh.restore([state.snapshot()])
>>> sorted(fresh.items())
[(7, 8), (9, 15)]
>>> copy = state.snapshot_copy()
>>> _ = state.running_sums(np.array([7]), np.array([100]))
>>> later = KeyedSums((0, 127), 128)
>>> later.restore([copy.encode()])
>>> later.get(7)
8
>>> state.track_changes()
>>> _ = state.running_sums(np.array([9]), np.array([1]))
>>> delta = state.delta_copy()
>>> delta.keys.tolist(), delta.values.tolist(), delta.delta
([9], [16], True)
>>> later.restore([delta.encode()])
>>> sorted(later.items())
[(7, 8), (9, 16)]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from barrier_runtime.core import values
from barrier_runtime.state import key_groups, keyed

KeyArray = npt.NDArray[Any]
"""Keys: an int64 array, or an object array of str/int/bytes keys."""
Int64Array = npt.NDArray[np.int64]

_FORMAT = {keyed.FORMAT_KEY: keyed.FORMAT}
_SUM_SCHEMAS = {
    "int": pa.schema(
        [("key_group", pa.int32()), ("key", pa.int64()), ("value", pa.int64())], metadata=_FORMAT
    ),
    "object": pa.schema(
        [("key_group", pa.int32()), ("key", pa.binary()), ("value", pa.int64())], metadata=_FORMAT
    ),
}


class MixedKeyTypesError(TypeError):
    """A step's keys cannot be ordered together (e.g. strings next to integers)."""


class KeyedSums:
    """A running int64 sum per key, for the keys in ``[start, end]`` key groups."""

    def __init__(self, key_group_range: tuple[int, int], max_parallelism: int) -> None:
        self.start, self.end = key_group_range
        self.max_parallelism = max_parallelism
        self._keys: KeyArray = np.empty(0, dtype=np.int64)
        self._values: Int64Array = np.empty(0, dtype=np.int64)
        self._changed: list[KeyArray] | None = None
        """The distinct keys of every update since the last delta, once tracking."""

    def __len__(self) -> int:
        return len(self._keys)

    def items(self) -> Iterator[tuple[key_groups.Key, int]]:
        yield from zip(self._keys.tolist(), self._values.tolist(), strict=True)

    def get(self, key: key_groups.Key) -> int | None:
        keys = self._keys
        i = int(np.searchsorted(keys, key)) if len(keys) else 0
        return int(self._values[i]) if i < len(keys) and keys[i] == key else None

    # -- the vectorised update --------------------------------------------------------

    def running_sums(self, keys: KeyArray, values: Int64Array) -> Int64Array:
        """Each record's running sum (see the module essay); updates the state."""
        n = len(keys)
        if n == 0:
            return np.empty(0, dtype=np.int64)
        keys = self._unify(keys)
        values = values.astype(np.int64, copy=False)
        # Step 1
        order, sorted_keys = _stable_sort(keys)
        sorted_values = values[order]
        # Step 2
        cumulative = np.cumsum(sorted_values)
        is_start = np.empty(n, dtype=bool)
        is_start[0] = True
        np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=is_start[1:])
        starts = np.flatnonzero(is_start)
        # Step 3
        distinct = sorted_keys[starts]
        slots = self._slots(distinct)
        if self._changed is not None:
            self._changed.append(distinct)
        # Step 4
        offsets = self._values[slots] - (cumulative[starts] - sorted_values[starts])
        group = np.cumsum(is_start) - 1
        running = cumulative + offsets[group]
        ends = np.append(starts[1:], n) - 1
        self._values[slots] = running[ends]
        out = np.empty(n, dtype=np.int64)
        out[order] = running
        return out

    def _unify(self, keys: KeyArray) -> KeyArray:
        """Bring batch keys and stored keys to one dtype (int64, or objects if either is)."""
        if keys.dtype == np.int64 and self._keys.dtype == np.int64:
            return keys
        if self._keys.dtype == np.int64:
            self._keys = _as_objects(self._keys)
        return keys if keys.dtype == object else _as_objects(keys)

    def _slots(self, distinct: KeyArray) -> Int64Array:
        """Positions of the sorted ``distinct`` keys in the state, inserting missing ones."""
        stored = self._keys
        try:
            pos = np.searchsorted(stored, distinct).astype(np.int64)
        except TypeError as exc:
            raise _mixed(exc) from exc
        if len(stored):
            found = (pos < len(stored)) & (stored[np.minimum(pos, len(stored) - 1)] == distinct)
        else:
            found = np.zeros(len(distinct), dtype=bool)
        if found.all():
            return pos
        missing = ~found
        self._check_range(distinct[missing])
        self._keys = np.insert(stored, pos[missing], distinct[missing])
        self._values = np.insert(self._values, pos[missing], 0)
        # Each key moves right by the number of new keys inserted before it.
        shifted: Int64Array = pos + np.cumsum(missing) - missing
        return shifted

    def _check_range(self, new_keys: KeyArray) -> None:
        groups = _key_groups(new_keys, self.max_parallelism)
        wrong = (groups < self.start) | (groups > self.end)
        if wrong.any():
            i = int(np.flatnonzero(wrong)[0])
            raise KeyError(
                f"key {new_keys[i]!r} is in key group {int(groups[i])}, outside this subtask's "
                f"range [{self.start}, {self.end}]: records were routed to the wrong subtask"
            )

    # -- snapshot and restore ---------------------------------------------------------

    def snapshot(self) -> bytes:
        """Serialise every key's sum as Arrow IPC bytes (copy and encode in one go)."""
        return self.snapshot_copy().encode()

    def snapshot_copy(self, step_id: str = "?") -> SumsSnapshot:
        """The synchronous half of a snapshot: a copy that later updates do not touch."""
        return SumsSnapshot(
            self._keys.copy(), self._values.copy(), self.max_parallelism, self.start, self.end
        )

    def track_changes(self) -> None:
        """Start keeping the keys each update touches, for :meth:`delta_copy`."""
        if self._changed is None:
            self._changed = []

    def delta_copy(self, step_id: str = "?") -> SumsSnapshot:
        """The sums of the keys updated since the last delta (then forgets them)."""
        if self._changed is None:
            raise RuntimeError(f"step {step_id!r}: a delta needs track_changes() first")
        parts, self._changed = self._changed, []
        stored = self._keys
        if not parts:
            keys: KeyArray = stored[:0].copy()
        else:
            if stored.dtype == object:
                parts = [p if p.dtype == object else _as_objects(p) for p in parts]
            keys = np.unique(np.concatenate(parts))
        sums = self._values[np.searchsorted(stored, keys)] if len(keys) else self._values[:0]
        return SumsSnapshot(
            keys, sums.copy(), self.max_parallelism, self.start, self.end, delta=True
        )

    def restore(self, blobs: Iterable[bytes]) -> None:
        """Load the rows of ``blobs`` that fall into this subtask's key-group range (in the
        order they were taken: where a key appears twice, the later row wins)."""
        key_parts: list[KeyArray] = [self._keys]
        value_parts: list[Int64Array] = [self._values]
        for blob in blobs:
            table = keyed.read_table(blob)
            groups = table.column("key_group").to_numpy()
            mine = (groups >= self.start) & (groups <= self.end)
            keys = (
                table.column("key").to_numpy()
                if pa.types.is_integer(table.schema.field("key").type)
                else np.array(
                    [values.decode(k) for k in table.column("key").to_pylist()] or [], dtype=object
                )
            )
            key_parts.append(keys[mine])
            value_parts.append(table.column("value").to_numpy()[mine])
        if any(p.dtype == object for p in key_parts):
            key_parts = [p if p.dtype == object else _as_objects(p) for p in key_parts]
        keys = np.concatenate(key_parts)
        order = _argsort(keys)  # stable: a key's rows stay in the order they were read
        keys, sums = keys[order], np.concatenate(value_parts).astype(np.int64)[order]
        last = np.ones(len(keys), dtype=bool)
        np.not_equal(keys[1:], keys[:-1], out=last[:-1])
        self._keys, self._values = keys[last], sums[last]


@dataclass(frozen=True, slots=True)
class SumsSnapshot:
    """A copy of a :class:`KeyedSums` (sorted keys and their sums), not yet serialised."""

    keys: KeyArray
    values: Int64Array
    max_parallelism: int
    start: int = 0
    end: int = 0
    """The key-group range of the state it was copied from (inclusive)."""
    delta: bool = False
    """Whether it holds only the keys updated since the previous delta."""

    @property
    def rows(self) -> int:
        return len(self.keys)

    def encode(self) -> bytes:
        """The Arrow IPC stream of the copy (one record batch, ZSTD-compressed buffers)."""
        groups = _key_groups(self.keys, self.max_parallelism).astype(np.int32)
        if self.keys.dtype == np.int64:
            schema = _SUM_SCHEMAS["int"]
            keys = pa.array(self.keys, type=pa.int64())
        else:
            schema = _SUM_SCHEMAS["object"]
            keys = pa.array([values.encode(k) for k in self.keys], type=pa.binary())
        if self.delta:
            schema = schema.with_metadata({**_FORMAT, keyed.DELTA_KEY: b"1"})
        batch = pa.record_batch(
            [pa.array(groups), keys, pa.array(self.values, type=pa.int64())], schema=schema
        )
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, schema, options=keyed.IPC_OPTIONS) as writer:
            writer.write_batch(batch)
        data: bytes = sink.getvalue().to_pybytes()
        return data


def _stable_sort(keys: KeyArray) -> tuple[Int64Array, KeyArray]:
    """``(order, keys[order])`` with equal keys in their original order.

    For int64 keys whose range is small enough, the row index is packed below
    the key and a plain (fast, unstable) value sort is used; ties cannot occur.
    """
    n = len(keys)
    if keys.dtype == np.int64:
        low, high = int(keys.min()), int(keys.max())
        bits = max(1, (n - 1).bit_length())
        if high - low < 1 << (62 - bits):
            packed = ((keys - low) << bits) | np.arange(n, dtype=np.int64)
            packed.sort()
            return packed & ((1 << bits) - 1), (packed >> bits) + low
    order = _argsort(keys)
    return order, keys[order]


def _argsort(keys: KeyArray) -> Int64Array:
    try:
        return np.argsort(keys, kind="stable").astype(np.int64, copy=False)
    except TypeError as exc:
        raise _mixed(exc) from exc


def _mixed(exc: TypeError) -> MixedKeyTypesError:
    return MixedKeyTypesError(
        f"keys of different types cannot share a keyed step ({exc}); "
        "convert the key column to one type"
    )


def _as_objects(keys: KeyArray) -> KeyArray:
    out = np.empty(len(keys), dtype=object)
    out[:] = keys.tolist()
    return out


def _key_groups(keys: KeyArray, max_parallelism: int) -> Int64Array:
    if keys.dtype == np.int64:
        return (key_groups.stable_hash_int64(keys) % np.uint64(max_parallelism)).astype(np.int64)
    return np.fromiter(
        (key_groups.key_group_for(k, max_parallelism) for k in keys.tolist()),
        dtype=np.int64,
        count=len(keys),
    )
