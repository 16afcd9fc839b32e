"""Key groups: the unit in which keyed state is partitioned, snapshotted and rescaled.

``key_group = stable_hash(key) % max_parallelism``. Subtask *i* of *P* owns a
contiguous range of key groups, so a restore at another parallelism only
re-assigns ranges. The hash must be identical in every process and every
run, so Python's salted ``hash()`` is never used.

Integers in the signed 64-bit range hash with the SplitMix64 finalizer, which
is a handful of multiply/shift/xor steps and therefore vectorises:
:func:`stable_hash_int64` computes it for a whole NumPy array and gives exactly
:func:`stable_hash` of each element. Strings, bytes and wider integers hash
with BLAKE2b of a type-tagged encoding. :func:`key_groups_of` assigns key
groups to a whole Arrow column the way the per-record path does record by
record (:func:`column_key`, then :func:`key_group_for`), vectorised when the
column holds integers.

>>> key_group_for("user-1", 128) == key_group_for("user-1", 128)
True
>>> key_group_range(0, 3, 128), key_group_range(2, 3, 128)
((0, 42), (86, 127))
>>> subtask_for_key_group(42, 3, 128), subtask_for_key_group(43, 3, 128)
(0, 1)
>>> import numpy as np
>>> keys = np.array([0, -1, 2**63 - 1], dtype=np.int64)
>>> [int(h) for h in stable_hash_int64(keys)] == [stable_hash(int(k)) for k in keys]
True
>>> import pyarrow as pa
>>> key_groups_of(pa.array([7, 8]), 128).tolist() == [key_group_for(7, 128), key_group_for(8, 128)]
True
>>> mixed = ["user-1", b"user-1", 7, 2**70, "user-1"]
>>> key_groups_for_keys(mixed, 128).tolist() == [key_group_for(k, 128) for k in mixed]
True
>>> key_groups_for_keys([3, -4], 128).tolist() == [key_group_for(3, 128), key_group_for(-4, 128)]
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

Key = str | int | bytes

_MASK64 = (1 << 64) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB


def stable_hash(key: Key) -> int:
    """A 64-bit hash of ``key`` that is the same in every process and run."""
    if isinstance(key, bytes):
        data = b"b" + key
    elif isinstance(key, bool) or not isinstance(key, str | int):
        raise TypeError(f"keys must be str, int or bytes, got {type(key).__name__}: {key!r}")
    elif isinstance(key, int):
        if _INT64_MIN <= key <= _INT64_MAX:
            return _splitmix64(key & _MASK64)
        data = b"i" + str(key).encode()
    else:
        data = b"s" + key.encode("utf-8")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def _splitmix64(x: int) -> int:
    z = (x + _GOLDEN) & _MASK64
    z = ((z ^ (z >> 30)) * _MIX1) & _MASK64
    z = ((z ^ (z >> 27)) * _MIX2) & _MASK64
    return z ^ (z >> 31)


def stable_hash_int64(keys: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
    """:func:`stable_hash` of every element of an int64 array (unsigned 64-bit results)."""
    z = keys.astype(np.uint64, copy=True)
    z += np.uint64(_GOLDEN)  # NumPy's unsigned arithmetic wraps modulo 2**64, as intended
    z ^= z >> np.uint64(30)
    z *= np.uint64(_MIX1)
    z ^= z >> np.uint64(27)
    z *= np.uint64(_MIX2)
    z ^= z >> np.uint64(31)
    return z


def column_key(value: Any) -> Key:
    """The key a column value stands for: itself if str, int or bytes, else ``str(value)``."""
    return value if isinstance(value, str | int | bytes) else str(value)


def key_group_for(key: Key, max_parallelism: int) -> int:
    return stable_hash(key) % max_parallelism


_CACHE_LIMIT = 1 << 17
"""Entries of the hash cache; it is emptied when full (bounded memory, no eviction bookkeeping)."""
_CACHED_KEY_BYTES = 256
"""Longer strings and bytes are hashed each time rather than held in the cache."""
_CACHEABLE = frozenset({str, bytes, int})
_HASH_CACHE: dict[Key, int] = {}
"""``stable_hash`` of keys of exact type ``str``, ``bytes`` or ``int``, for all threads."""


def stable_hashes(keys: Sequence[Any]) -> npt.NDArray[np.uint64]:
    """:func:`stable_hash` of every key (``TypeError`` for a key that is not str, int or bytes).

    All-``int`` keys in the signed 64-bit range are hashed in one vectorised
    pass; otherwise each key is looked up in a bounded per-process cache.
    Only keys whose type is exactly ``str``, ``bytes`` or ``int`` are looked up
    (so ``True`` never finds ``1``, nor a ``str`` subclass a ``str``).
    """
    n = len(keys)
    kinds = set(map(type, keys))
    if n and kinds == {int}:
        try:
            ints = np.fromiter(keys, dtype=np.int64, count=n)
        except OverflowError:  # beyond 64 bits: hashed through the cache below
            pass
        else:
            return stable_hash_int64(ints)
    if not kinds <= _CACHEABLE:
        return np.array([stable_hash(k) for k in keys], dtype=np.uint64)
    cache = _HASH_CACHE
    hashes: list[int | None] = list(map(cache.get, keys))
    if None in hashes:
        for i, cached in enumerate(hashes):
            if cached is None:
                key = keys[i]
                h = hashes[i] = stable_hash(key)
                if type(key) is int or len(key) <= _CACHED_KEY_BYTES:
                    if len(cache) >= _CACHE_LIMIT:
                        cache.clear()
                    cache[key] = h
    return np.array(hashes, dtype=np.uint64)


def key_groups_for_keys(keys: Sequence[Any], max_parallelism: int) -> npt.NDArray[np.int64]:
    """:func:`key_group_for` of every key, through :func:`stable_hashes`."""
    return (stable_hashes(keys) % np.uint64(max_parallelism)).astype(np.int64)


def key_groups_of(
    column: pa.Array | pa.ChunkedArray, max_parallelism: int
) -> npt.NDArray[np.int64]:
    """The key group of every value of an Arrow key column, as ``key_group_for(column_key(v))``.

    Integer columns without nulls (and values below 2**63) are hashed in one
    vectorised pass; any other column falls back to hashing each distinct value.
    """
    ints = int64_values(column)
    if ints is not None:
        return (stable_hash_int64(ints) % np.uint64(max_parallelism)).astype(np.int64)
    cache: dict[Any, int] = {}
    out = np.empty(len(column), dtype=np.int64)
    for i, value in enumerate(column.to_pylist()):
        kg = cache.get(value) if isinstance(value, str | int | bytes) else None
        if kg is None:
            kg = key_group_for(column_key(value), max_parallelism)
            if isinstance(value, str | int | bytes):
                cache[value] = kg
        out[i] = kg
    return out


def int64_values(column: pa.Array | pa.ChunkedArray) -> npt.NDArray[np.int64] | None:
    """The column as an int64 NumPy array if it holds integers that fit exactly, else ``None``."""
    if not pa.types.is_integer(column.type) or column.null_count:
        return None
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    values: npt.NDArray[Any] = column.to_numpy(zero_copy_only=False)
    if values.dtype == np.uint64 and len(values) and int(values.max()) > _INT64_MAX:
        return None
    return values.astype(np.int64, copy=False)


def key_group_range(subtask: int, parallelism: int, max_parallelism: int) -> tuple[int, int]:
    """The inclusive key-group range owned by ``subtask``."""
    if not 0 <= subtask < parallelism <= max_parallelism:
        raise ValueError(
            f"subtask {subtask} of parallelism {parallelism} (max {max_parallelism}) is invalid"
        )
    start = (subtask * max_parallelism + parallelism - 1) // parallelism
    end = ((subtask + 1) * max_parallelism + parallelism - 1) // parallelism - 1
    return start, end


def subtask_for_key_group(key_group: int, parallelism: int, max_parallelism: int) -> int:
    """The subtask whose range contains ``key_group``."""
    return key_group * parallelism // max_parallelism


def subtasks_for_key_groups(
    key_groups: npt.NDArray[np.int64], parallelism: int, max_parallelism: int
) -> npt.NDArray[np.int64]:
    """:func:`subtask_for_key_group` of every element."""
    return key_groups * parallelism // max_parallelism
