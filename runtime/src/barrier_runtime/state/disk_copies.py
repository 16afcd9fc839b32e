"""Copies of an on-disk keyed state (:mod:`.disk_keyed`) taken at a barrier and encoded on
the upload thread, from a RocksDB checkpoint (the store's immutable files, hard-linked),
in objects of bounded size: a whole copy in ranges of key groups, a delta in runs of its
changed keys. Nothing is held in memory but the object being encoded.
"""

from __future__ import annotations

import contextlib
import itertools
import pathlib
import shutil
import threading
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import rocksdict

from barrier_runtime.state import keyed, spilling_values

CHUNK_ROWS = 16_384
"""Rows per record batch of a streamed state object."""
PART_BYTES = 16 << 20
"""At most how large one object of a full copy is (its encoding is held in memory while it
uploads, and a restore reads one at a time)."""
ENCODING_FACTOR = 5
"""Memory an object takes while it is encoded, against its size (the rows as Python bytes,
the Arrow arrays, the IPC stream, the upload's copy)."""


def part_bytes(memory_bytes: int) -> int:
    """The object size a state budget of ``memory_bytes`` affords: its last quarter holds one
    object being encoded (at most :data:`PART_BYTES`).

    >>> part_bytes(256 << 20) >> 20, part_bytes(16 << 20) >> 10
    (12, 819)
    """
    return max(64 << 10, min(PART_BYTES, memory_bytes // 4 // ENCODING_FACTOR))


class CopyClosedError(RuntimeError):
    """A copy was read after its state closed (its attempt ended, its files are gone)."""


class CopyReads:
    """How the copies of one state open their RocksDB checkpoints: one at a time, and
    never once the state has closed. Opening a removed checkpoint would create its
    directory again (RocksDB writes there before it finds no database), so a copy
    still queued for upload when its attempt ends would leave it behind."""

    def __init__(self, memory: spilling_values.StoreMemory) -> None:
        self.memory = memory
        """Whose block cache reading a checkpoint uses (the subtask's budget)."""
        self._lock = threading.Lock()
        self._closed = False

    @contextlib.contextmanager
    def open(self, checkpoint: pathlib.Path) -> Iterator[Any]:
        """The checkpoint, read-only, while the state stays open."""
        with self._lock:
            if self._closed:
                raise CopyClosedError(
                    f"the state copy {checkpoint} was read after its state closed"
                )
            copy: Any = rocksdict.Rdict(
                str(checkpoint), self.memory.options(), access_type=rocksdict.AccessType.read_only()
            )
            try:
                yield copy
            finally:
                copy.close()

    def close(self) -> None:
        """No copy opens from now on (waits for the one being read)."""
        with self._lock:
            self._closed = True


@dataclass(frozen=True, slots=True, weakref_slot=True)
class RangeCopy:
    """A disk state as of a barrier: a RocksDB snapshot, streamed into a state object later."""

    step_id: str
    start: int
    end: int
    content: bytes
    checkpoint: pathlib.Path
    """A RocksDB checkpoint (hard links to the store's immutable files) taken at the barrier,
    removed when this copy is garbage (uploaded, or dropped)."""
    rows: int
    reads: CopyReads
    part_bytes: int = PART_BYTES
    delta: bool = False

    def __post_init__(self) -> None:
        # the checkpoint goes with the copy (and its parts): once uploaded, or dropped unused
        weakref.finalize(self, shutil.rmtree, self.checkpoint, True)

    def split_objects(self) -> list[RangePart]:
        """The copy as objects of about :attr:`part_bytes` each: ranges of its key groups
        (keys hash evenly over key groups, so equal ranges hold about equal shares)."""
        stored = sum(p.stat().st_size for p in self.checkpoint.glob("*.sst"))
        groups = self.end - self.start + 1
        count = max(1, min(groups, -(-stored // self.part_bytes)))
        bounds = [self.start + groups * i // count for i in range(count + 1)]
        return [
            RangePart(self, lo, hi - 1, self.rows * (hi - lo) // groups)
            for lo, hi in itertools.pairwise(bounds)
        ]

    def encode(self) -> bytes:
        """The state object's bytes: every stored entry, in key order (so by key group)."""
        return self.encode_range(self.start, self.end)

    def encode_range(self, start: int, end: int) -> bytes:
        """The entries of key groups ``start`` to ``end`` as one state object."""
        scan = rocksdict.ReadOptions()
        scan.fill_cache(False)  # type: ignore[call-arg]  # (its stub lacks the flag) a scan once through: it would only push the live state out
        schema = keyed.state_schema(self.content)
        sink = pa.BufferOutputStream()
        with (
            self.reads.open(self.checkpoint) as copy,
            pa.ipc.new_stream(sink, schema, options=keyed.IPC_OPTIONS) as writer,
        ):
            groups: list[int] = []
            keys: list[bytes] = []
            data: list[bytes] = []
            prefix_end = (end + 1).to_bytes(2, "big")
            for stored, value in copy.items(from_key=start.to_bytes(2, "big"), read_opt=scan):
                if stored >= prefix_end:
                    break
                groups.append(int.from_bytes(stored[:2], "big"))
                keys.append(stored[2:])
                data.append(value)
                if len(keys) == CHUNK_ROWS:
                    writer.write_batch(_batch(schema, groups, keys, data))
                    groups, keys, data = [], [], []
            if keys or writer.stats.num_record_batches == 0:  # an empty object has one batch
                writer.write_batch(_batch(schema, groups, keys, data))
        return bytes(sink.getvalue().to_pybytes())


@dataclass(frozen=True, slots=True)
class RangePart:
    """One object of a :class:`RangeCopy`: its key groups ``start`` to ``end``."""

    whole: RangeCopy
    start: int
    end: int
    rows: int
    """An estimate (the policy that retakes bases only weighs it)."""
    delta: bool = False

    def encode(self) -> bytes:
        return self.whole.encode_range(self.start, self.end)


def _batch(
    schema: pa.Schema, groups: list[int], keys: list[bytes], data: Sequence[bytes | None]
) -> Any:
    return pa.record_batch(
        [
            pa.array(groups, type=pa.int32()),
            pa.array(keys, type=pa.binary()),
            pa.array(data, type=pa.binary()),
        ],
        schema=schema,
    )


DELTA_ENTRY_BYTES = 160
"""What a changed key is counted as when a delta is cut into objects (its stored key and
value and their share of the encoding)."""


@dataclass(frozen=True, slots=True, weakref_slot=True)
class DeltaCopy:
    """The keys a disk state changed since its last delta, as of a barrier: their stored
    keys (sorted, so grouped by key group), read from a RocksDB checkpoint on the upload
    thread (a key it no longer holds is a tombstone)."""

    step_id: str
    start: int
    end: int
    content: bytes
    checkpoint: pathlib.Path
    keys: Sequence[bytes]
    reads: CopyReads
    part_bytes: int
    rows: int
    delta: bool = True

    def __post_init__(self) -> None:
        weakref.finalize(self, shutil.rmtree, self.checkpoint, True)

    def split_objects(self) -> list[DeltaPart]:
        """Runs of whole key groups of about :attr:`part_bytes` each."""
        per_part = max(1, self.part_bytes // DELTA_ENTRY_BYTES)
        parts: list[DeltaPart] = []
        run: list[bytes] = []
        run_start = self.start
        for group, stored in itertools.groupby(self.keys, key=lambda k: k[:2]):
            run.extend(stored)
            if len(run) >= per_part:
                last = int.from_bytes(group, "big")
                parts.append(DeltaPart(self, run_start, last, tuple(run), len(run)))
                run, run_start = [], last + 1
        if run or not parts:
            parts.append(DeltaPart(self, run_start, self.end, tuple(run), len(run)))
        else:  # the last run ended exactly: stretch it to the copy's end
            tail = parts[-1]
            parts[-1] = DeltaPart(self, tail.start, self.end, tail.keys, tail.rows)
        return parts

    def encode(self) -> bytes:
        return self.encode_keys(self.keys)

    def encode_keys(self, keys: Sequence[bytes]) -> bytes:
        """The state object of ``keys``: their stored values, null where deleted."""
        schema = keyed.state_schema(self.content, delta=True)
        sink = pa.BufferOutputStream()
        with (
            self.reads.open(self.checkpoint) as copy,
            pa.ipc.new_stream(sink, schema, options=keyed.IPC_OPTIONS) as writer,
        ):
            for lo in range(0, max(len(keys), 1), CHUNK_ROWS):
                chunk = list(keys[lo : lo + CHUNK_ROWS])
                values: list[bytes | None] = copy[chunk] if chunk else []
                groups = [int.from_bytes(k[:2], "big") for k in chunk]
                writer.write_batch(_batch(schema, groups, [k[2:] for k in chunk], values))
        return bytes(sink.getvalue().to_pybytes())


@dataclass(frozen=True, slots=True)
class DeltaPart:
    """One object of a :class:`DeltaCopy`: its changed keys in key groups ``start`` to ``end``."""

    whole: DeltaCopy
    start: int
    end: int
    keys: tuple[bytes, ...]
    rows: int
    delta: bool = True

    def encode(self) -> bytes:
        return self.whole.encode_keys(self.keys)
