"""The on-disk keyed state backend: a :class:`~barrier_runtime.state.keyed.KeyedState`
whose values live in RocksDB behind a bounded cache (:mod:`.spilling_values`).

Same contract and same state objects as the in-memory backend, so checkpoints of one
restore into the other, at any parallelism, whole or as chains of deltas:

* **Full copy** (:meth:`DiskKeyedState.snapshot_copy`: a non-incremental checkpoint,
  a chain's base, a savepoint): at the barrier the cache's dirty entries are written
  to RocksDB and a RocksDB checkpoint is taken (its memtable flushed, its immutable
  files hard-linked: no data is copied); :meth:`RangeCopy.encode`, on the upload
  thread, streams that checkpoint into the state object while processing goes on; the
  checkpoint goes when the copy does. Stored keys and values are already codec
  bytes, so nothing is decoded or encoded again.
* **Delta** (:meth:`DiskKeyedState.delta_copy`): the changed keys' stored bytes, read
  at the barrier after the same flush (tombstones for deleted keys).
* **Restore** writes a state object's rows of this subtask's key groups straight
  into RocksDB as bytes, base first and then deltas.

>>> import tempfile, pathlib
>>> state = DiskKeyedState((0, 127), 128, pathlib.Path(tempfile.mkdtemp()), 1 << 22)
>>> state.put("a", [1]); state.put(7, 2)
>>> copy = state.snapshot_copy("count")
>>> state.put("a", [1, 99])  # after the barrier
>>> fresh = keyed.KeyedState((0, 127), 128)
>>> fresh.restore([copy.encode()])
>>> fresh.get("a"), fresh.get(7)
([1], 2)
>>> state.track_changes(); state.put("b", 3); state.put(7, None)
>>> delta = state.delta_copy("count")
>>> again = DiskKeyedState((0, 127), 128, pathlib.Path(tempfile.mkdtemp()), 1 << 22)
>>> again.restore([copy.encode(), delta.encode()])
>>> again.get("a"), again.get("b"), again.get(7), len(again)
([1], 3, None, 2)
>>> state.close(); again.close()
"""

from __future__ import annotations

import pathlib
import shutil
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc
import rocksdict

from barrier_runtime.core import values as codec
from barrier_runtime.state import disk_copies, keyed, spilling_values


class DiskKeyedState(keyed.KeyedState):
    """One value per key for the keys in ``[start, end]`` key groups, spilled to RocksDB."""

    def __init__(
        self,
        key_group_range: tuple[int, int],
        max_parallelism: int,
        path: pathlib.Path,
        cache_bytes: int,
        content: bytes = keyed.VALUES,
        store_memory: spilling_values.StoreMemory | None = None,
        part_bytes: int = disk_copies.PART_BYTES,
    ) -> None:
        """``cache_bytes``: the memory of its decoded values; RocksDB's is ``store_memory``;
        a full copy uploads as objects of about ``part_bytes``."""
        self.part_bytes = part_bytes
        super().__init__(key_group_range, max_parallelism, content)
        self.spilled = spilling_values.SpillingValues(
            path, max_parallelism, cache_bytes=cache_bytes, store_memory=store_memory
        )
        self.values = self.spilled  # type: ignore[assignment]
        self.reads = disk_copies.CopyReads(self.spilled.memory)
        self._copies = 0

    def mark(self, key: keyed.Key) -> None:
        """``key``'s value changed in place: the cache writes it back, a delta takes it."""
        self.spilled.touch(key)
        super().mark(key)

    def close(self) -> None:
        """Close the store and remove its files (a restart restores from a checkpoint),
        its copies' too: a copy not yet uploaded can no longer be read."""
        self.reads.close()
        self.spilled.close()
        shutil.rmtree(self.spilled.path, ignore_errors=True)
        for copy in self.spilled.path.parent.glob(self._copy_path("*").name):
            shutil.rmtree(copy, ignore_errors=True)

    def snapshot_copy(self, step_id: str = "?") -> disk_copies.RangeCopy:
        self._flush(step_id)
        where = self._checkpoint()
        return disk_copies.RangeCopy(
            step_id,
            self.start,
            self.end,
            self.content,
            where,
            len(self.spilled),
            self.reads,
            min(self.part_bytes, disk_copies.PART_BYTES),
        )

    def delta_copy(self, step_id: str = "?") -> keyed.Copy:
        if self.changed is None:
            raise RuntimeError(f"step {step_id!r}: a delta needs track_changes() first")
        self._flush(step_id)
        changed, self.changed = list(self.changed), set()
        mp, db = self.max_parallelism, self.spilled.db
        part = min(self.part_bytes, disk_copies.PART_BYTES)
        if len(changed) * disk_copies.DELTA_ENTRY_BYTES > part:  # read later, in objects
            keys = sorted(spilling_values.storage_key(key, mp) for key in changed)
            return disk_copies.DeltaCopy(
                step_id,
                self.start,
                self.end,
                self.content,
                self._checkpoint(),
                keys,
                self.reads,
                part,
                len(keys),
            )
        stored: list[bytes | None] = (
            db[[spilling_values.storage_key(key, mp) for key in changed]] if changed else []
        )
        encoded = {key: raw for key, raw in zip(changed, stored, strict=True) if raw is not None}
        deleted = tuple(key for key, raw in zip(changed, stored, strict=True) if raw is None)
        return keyed.StateCopy(
            step_id,
            self.start,
            self.end,
            self.max_parallelism,
            {},
            encoded,
            self.content,
            deleted,
            True,
        )

    def restore(self, blobs: Iterable[bytes]) -> None:
        """Write the rows of ``blobs`` in this subtask's key groups into RocksDB as they are
        (bytes of the codec), a base first and then its deltas."""
        db = self.spilled.db
        for blob in blobs:
            table = keyed.read_table(blob)
            groups = table.column("key_group")
            mine = pc.and_(pc.greater_equal(groups, self.start), pc.less_equal(groups, self.end))
            table = table.filter(mine)
            for chunk in table.to_batches(disk_copies.CHUNK_ROWS):
                batch = rocksdict.WriteBatch(raw_mode=True)
                rows = zip(
                    chunk.column(0).to_pylist(),
                    chunk.column(1).cast(pa.binary()).to_pylist(),
                    chunk.column(2).to_pylist(),
                    strict=True,
                )
                for group, key, value in rows:
                    stored = group.to_bytes(2, "big") + key
                    if value is None:
                        batch.delete(stored)
                    else:
                        batch.put(stored, value)
                db.write(batch)
        # Rdict is not iterable by itself: its keys() is the iterator
        self.spilled.restored(sum(1 for _ in db.keys()))  # noqa: SIM118

    def _checkpoint(self) -> pathlib.Path:
        """A RocksDB checkpoint of the store now (memtable flushed, files hard-linked)."""
        self._copies += 1
        where = self._copy_path(str(self._copies))
        shutil.rmtree(where, ignore_errors=True)  # left by an earlier attempt
        rocksdict.Checkpoint(self.spilled.db).create_checkpoint(str(where))
        return where

    def _copy_path(self, number: str) -> pathlib.Path:
        """Where the store's checkpoint ``number`` goes (next to the store)."""
        return self.spilled.path.with_name(f"{self.spilled.path.name}.copy-{number}")

    def _flush(self, step_id: str) -> None:
        try:
            self.spilled.flush()
        except codec.UnencodableValueError as exc:
            raise keyed.UnencodableStateError(
                f"step {step_id!r} cannot snapshot its state: {exc}"
            ) from exc
