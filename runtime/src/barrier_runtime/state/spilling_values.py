"""Keyed values larger than memory: a bounded cache of live values in front of RocksDB.

:class:`SpillingValues` is the mapping a keyed state's operators read and write
(``get``, ``[key] = value``, ``pop``, ``items``), like the in-memory backend's
``dict``, but only the most recently loaded or written entries live in Python
objects. The rest live in an embedded RocksDB (``rocksdict`` in raw mode: keys and
values are bytes of :mod:`~barrier_runtime.core.values`, the data-only codec, so
nothing read back from disk can run code).

* A stored key is its key group (2 bytes, big-endian) and then the key's codec
  bytes: a key group's keys are one contiguous range, so a restore at another
  parallelism, or a snapshot of a range, reads ranges.
* The cache is write-back: a written entry is *dirty* until it is evicted or
  :meth:`SpillingValues.flush` writes it (at a snapshot); a deleted key is
  remembered until then. Eviction takes the oldest quarter of the cache (in
  order of loading or writing) in one write batch, when the cache holds more
  than its entry budget.
* The entry budget follows the memory the cache may take (``cache_bytes``): it is
  re-estimated at each eviction from the encoded sizes seen, times the Python
  objects' overhead. RocksDB's own memory (block cache and memtables) is a
  :class:`StoreMemory` that every store of a subtask shares.
* ``len()`` is exact: the first write or delete of a key the cache does not know
  checks RocksDB once (a bloom filter answers most of those checks in memory).

>>> import tempfile, pathlib
>>> values = SpillingValues(pathlib.Path(tempfile.mkdtemp()), 128, cache_bytes=1 << 20)
>>> values["a"] = [1, 2]; values[7] = "x"
>>> values.flush(); values.evict_all()
>>> values.get("a"), values[7], len(values), values.get("missing")
([1, 2], 'x', 2, None)
>>> del values[7]; sorted(values.items(), key=str)
[('a', [1, 2])]
>>> values.close()
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator, MutableMapping
from typing import Any

import rocksdict

from barrier_runtime.core import values as codec
from barrier_runtime.state import key_groups

Key = str | int | bytes

_MISSING: Any = object()
_ABSENT: Any = object()
"""A cache entry saying that the key is in neither the cache nor the store."""

OBJECT_OVERHEAD = 3.0
"""Python objects of a cached entry against its encoded bytes (dict slot, key and value
objects): the factor the entry budget divides by."""
MIN_ENTRY_BYTES = 64


def storage_key(key: Key, max_parallelism: int) -> bytes:
    """The bytes RocksDB keeps ``key`` under: its key group, then its codec bytes."""
    group = key_groups.key_group_for(key, max_parallelism)
    return group.to_bytes(2, "big") + codec.encode(key)


class StoreMemory:
    """RocksDB's memory, shared by every store of a subtask: one block cache, whose
    budget also pays for the memtables (a write buffer manager costed to the cache).

    >>> StoreMemory(64 << 20).budget
    67108864
    """

    def __init__(self, budget: int) -> None:
        self.budget = max(budget, 4 << 20)
        self.cache = rocksdict.Cache(self.budget)
        self.write_buffers = rocksdict.WriteBufferManager.new_write_buffer_manager_with_cache(
            self.budget // 2, False, self.cache
        )

    def options(self) -> Any:
        """Options of a RocksDB in raw mode (bytes in, bytes out) within this memory."""
        options = rocksdict.Options(raw_mode=True)
        options.create_if_missing(True)
        table = rocksdict.BlockBasedOptions()
        table.set_block_cache(self.cache)
        table.set_cache_index_and_filter_blocks(True)
        table.set_bloom_filter(10, False)
        options.set_block_based_table_factory(table)
        options.set_write_buffer_manager(self.write_buffers)
        options.set_write_buffer_size(max(self.budget // 8, 1 << 20))
        options.set_max_write_buffer_number(2)
        return options


class SpillingValues(MutableMapping[Key, Any]):
    """Key to value (never ``None``), most of it in RocksDB at ``path``."""

    def __init__(
        self,
        path: pathlib.Path,
        max_parallelism: int,
        *,
        cache_bytes: int,
        store_memory: StoreMemory | None = None,
    ) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.max_parallelism = max_parallelism
        self.memory = store_memory if store_memory is not None else StoreMemory(16 << 20)
        self.db: Any = rocksdict.Rdict(str(path), self.memory.options())
        self._cache_bytes = cache_bytes
        self._max_entries = max(cache_bytes // (MIN_ENTRY_BYTES * 4), 16)
        self._cache: dict[Key, Any] = {}
        self._dirty: set[Key] = set()
        self._count = 0

    # -- the mapping --------------------------------------------------------------

    def get(self, key: Key, default: Any = None) -> Any:
        value = self._cache.get(key, _MISSING)
        if value is _MISSING:
            value = self._load(key)
        return default if value is _ABSENT else value

    def __getitem__(self, key: Key) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        try:
            return self.get(key, _MISSING) is not _MISSING  # type: ignore[arg-type]
        except TypeError:  # not a key the codec holds: never stored
            return False

    def __setitem__(self, key: Key, value: Any) -> None:
        cache = self._cache
        before = cache.get(key, _MISSING)
        if before is _MISSING:
            before = self._load(key)
        if before is _ABSENT:
            self._count += 1
        cache[key] = value
        self._dirty.add(key)

    def __delitem__(self, key: Key) -> None:
        if self.pop(key, _MISSING) is _MISSING:
            raise KeyError(key)

    def pop(self, key: Key, default: Any = _MISSING) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            if default is _MISSING:
                raise KeyError(key)
            return default
        self._cache[key] = _ABSENT
        self._dirty.add(key)
        self._count -= 1
        return value

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Key]:
        for key, _value in self.items():
            yield key

    def items(self) -> Iterator[tuple[Key, Any]]:  # type: ignore[override]
        """Every entry, from the store (the cache is written to it first)."""
        self.flush()
        decode = codec.decode
        for raw_key, raw_value in self.db.items():
            key = decode(raw_key[2:])
            cached = self._cache.get(key, _MISSING)
            yield key, decode(raw_value) if cached is _MISSING else cached

    # -- the cache and the store ----------------------------------------------------

    def touch(self, key: Key) -> None:
        """``key``'s cached value was changed in place: write it back like a written one."""
        if self._cache.get(key, _ABSENT) is not _ABSENT:
            self._dirty.add(key)

    def flush(self) -> None:
        """Write every dirty entry (and every deletion) to RocksDB; they stay cached."""
        if self._dirty:
            self._write(self._dirty)
            self._dirty = set()

    def evict_all(self) -> None:
        """Write what is dirty and drop every cached entry (tests; a restore's end)."""
        self.flush()
        self._cache.clear()

    def restored(self, count: int) -> None:
        """Entries were written to :attr:`db` directly (a restore): forget the cache."""
        self._cache.clear()
        self._dirty.clear()
        self._count = count

    def close(self) -> None:
        self.db.close()

    def resize(self, cache_bytes: int) -> None:
        """A new memory share for the cache (another store joined the subtask's budget)."""
        self._max_entries = max(int(self._max_entries * cache_bytes / self._cache_bytes), 16)
        self._cache_bytes = cache_bytes
        while len(self._cache) > self._max_entries:
            self._evict()

    def _load(self, key: Key) -> Any:
        raw = self.db.get(storage_key(key, self.max_parallelism))
        value = _ABSENT if raw is None else codec.decode(raw)
        cache = self._cache
        cache[key] = value
        if len(cache) > self._max_entries:
            self._evict()
        return value

    def _evict(self) -> None:
        cache = self._cache
        oldest = []
        for key in cache:
            oldest.append(key)
            if len(oldest) * 4 >= len(cache):
                break
        dirty = self._dirty
        written = [key for key in oldest if key in dirty]
        encoded = self._write(written)
        dirty.difference_update(written)
        for key in oldest:
            del cache[key]
        if written:
            per_entry = max(encoded / len(written), MIN_ENTRY_BYTES) * OBJECT_OVERHEAD
            self._max_entries = max(int(self._cache_bytes / per_entry), 16)

    def _write(self, keys: Any) -> int:
        """Write ``keys``' cached values (deletions for absent ones) in one batch."""
        batch = rocksdict.WriteBatch(raw_mode=True)
        cache, mp, encode = self._cache, self.max_parallelism, codec.encode
        size = 0
        for key in keys:
            value = cache[key]
            stored = storage_key(key, mp)
            if value is _ABSENT:
                batch.delete(stored)
            else:
                data = encode(value)
                size += len(stored) + len(data)
                batch.put(stored, data)
        self.db.write(batch)
        return size
