"""Vectorised windows: count/sum/min/max/mean per key and window over whole Arrow batches.

Per batch
    1. event times of the whole batch and their windows (``assign_starts``);
    2. pairs whose window is closed (purge time reached by the watermark) are
       dropped; records with no open window go to the late side output;
    3. pyarrow groups the open pairs by ``(key, window start)`` and computes
       the partial count, sum, min and max of each group in C++;
    4. each group finds its *slot* (one per live key and window; a dict lookup
       per group, not per record) and the partials merge into the slots'
       NumPy arrays in one pass each;
    5. groups whose window had already fired (allowed lateness) are emitted
       again at once, as updates.

On the watermark
    Windows fire per window start, all keys at once, as one Arrow batch
    (keys in sorted order); at ``end - 1 + allowed lateness`` their slots are
    freed.

Checkpoints
    At the barrier the live slots' arrays are copied; on the upload thread they
    become an Arrow table (key group, key, window start, count, sum, min, max,
    firings), the keyed-state format with content mark ``window-slots``, so
    snapshots split by key group and restore at any parallelism.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from barrier_runtime import task_failure
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import event_time, steps, watermarks, windows
from barrier_runtime.state import key_groups, keyed
from barrier_runtime.task import operators


class WindowAggOperator(operators.StatefulOperator):
    """``KeyedStream.window_agg``; see the module essay."""

    def __init__(
        self,
        step: steps.WindowAggStep,
        emit: operators.Emit,
        emit_late: operators.Emit | None,
        key_group_range: tuple[int, int],
        max_parallelism: int,
    ) -> None:
        super().__init__(step.step_id, emit)
        assert isinstance(step.assigner, windows.Tumbling | windows.Sliding)
        assert step.input.key_column is not None
        self._step = step
        self._key_column = step.input.key_column
        self._size = step.assigner.size_ms
        self._emit_late = emit_late
        self._range = key_group_range
        self._max_parallelism = max_parallelism
        self.watermark = watermarks.MIN_WATERMARK
        self.late_dropped = 0
        self._slot_of: dict[tuple[Any, int], int] = {}
        self._key: npt.NDArray[Any] = np.empty(0, dtype=object)
        self._free: list[int] = []
        self._start = np.zeros(0, np.int64)
        self._count = np.zeros(0, np.int64)
        self._sum = np.zeros(0, np.float64)
        self._min = np.zeros(0, np.float64)
        self._max = np.zeros(0, np.float64)
        self._fired = np.zeros(0, np.int64)
        self._by_start: dict[int, list[int]] = {}
        self._to_fire: list[int] = []
        self._to_purge: list[int] = []

    # -- records ----------------------------------------------------------------------

    def process(self, batch: batch_mod.Batch, side: int) -> None:
        arrow = batch.to_arrow()
        try:
            times = event_time.timestamps_of(batch, self._step.timestamps)
        except event_time.EventTimeError as exc:
            raise task_failure.UserFunctionError(self.step_id, exc.record, exc) from exc
        rows, starts = self._step.assigner.assign_starts(times)
        keep = starts + (self._size - 1 + self._step.allowed_lateness_ms) > self.watermark
        self._late(arrow, rows, keep)
        if not keep.any():
            return
        rows, starts = rows[keep], starts[keep]
        columns: dict[str, Any] = {"k": arrow.column(self._key_column).take(pa.array(rows))}
        columns["s"] = pa.array(starts)
        aggs: list[tuple[Any, ...]] = [([], "count_all")]
        if self._step.column is not None:
            values = arrow.column(self._step.column).take(pa.array(rows))
            columns["v"] = values.cast(pa.float64())
            aggs = [("v", "count"), ("v", "sum"), ("v", "min"), ("v", "max")]
        grouped = pa.table(columns).group_by(["k", "s"]).aggregate(aggs)
        keys = grouped.column("k").to_pylist()
        group_starts = grouped.column("s").to_numpy()
        slots = self._slots(keys, group_starts)
        if self._step.column is None:
            self._count[slots] += grouped.column("count_all").to_numpy()
        else:
            self._count[slots] += grouped.column("v_count").to_numpy()
            self._sum[slots] += _filled(grouped.column("v_sum"), 0.0)
            self._min[slots] = np.minimum(
                self._min[slots], _filled(grouped.column("v_min"), np.inf)
            )
            self._max[slots] = np.maximum(
                self._max[slots], _filled(grouped.column("v_max"), -np.inf)
            )
        reached = group_starts + (self._size - 1) <= self.watermark
        if reached.any():  # late but allowed: updates, now
            self.emit(self._results(slots[reached]))

    def _late(self, arrow: pa.RecordBatch, rows: npt.NDArray[np.intp], keep: Any) -> None:
        placed = np.zeros(arrow.num_rows, dtype=bool)
        placed[rows[keep]] = True
        late = np.flatnonzero(~placed)
        if not len(late):
            return
        if self._emit_late is None:
            self.late_dropped += len(late)
        else:
            self._emit_late(batch_mod.Batch.from_arrow(arrow.take(pa.array(late))))

    def _slots(self, keys: list[Any], starts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The slot of each ``(key, start)``, new ones allocated and armed in bulk."""
        pairs = list(zip(keys, starts.tolist(), strict=True))
        found = list(map(self._slot_of.get, pairs))
        missing = [i for i, slot in enumerate(found) if slot is None]
        if missing:
            new = self._allocate(len(missing))
            for i, slot in zip(missing, new.tolist(), strict=True):
                found[i] = slot
            self._slot_of.update(zip([pairs[i] for i in missing], new.tolist(), strict=True))
            picked = np.array(missing, np.intp)
            self._key[new] = np.array([keys[i] for i in missing] + [None], dtype=object)[:-1]
            new_starts = starts[picked]
            self._start[new] = new_starts
            self._count[new], self._sum[new], self._fired[new] = 0, 0.0, 0
            self._min[new], self._max[new] = np.inf, -np.inf
            for start in np.unique(new_starts).tolist():
                self._arm(start).extend(new[new_starts == start].tolist())
        return np.array(found, np.int64)

    def _slot(self, key: Any, start: int) -> int:
        return int(self._slots([key], np.array([start], np.int64))[0])

    def _arm(self, start: int) -> list[int]:
        """The slots of windows starting at ``start``; a new window start gets its timers."""
        members = self._by_start.get(start)
        if members is None:
            self._by_start[start] = members = []
            heapq.heappush(self._to_fire, start)
            heapq.heappush(self._to_purge, start)
        return members

    def _allocate(self, n: int) -> npt.NDArray[np.int64]:
        while len(self._free) < n:
            self._grow()
        taken = self._free[-n:]
        del self._free[-n:]
        return np.array(taken, np.int64)

    def _grow(self) -> None:
        old = len(self._key)
        new = max(1024, old * 2)
        keys = np.empty(new, dtype=object)
        keys[:old] = self._key
        self._key = keys
        for name in ("_start", "_count", "_sum", "_min", "_max", "_fired"):
            array = getattr(self, name)
            grown = np.zeros(new, array.dtype)
            grown[:old] = array
            setattr(self, name, grown)
        self._free.extend(range(new - 1, old - 1, -1))

    # -- firing -------------------------------------------------------------------------

    def on_watermark(self, watermark: int) -> None:
        self.watermark = watermark
        fired: list[npt.NDArray[np.int64]] = []
        while self._to_fire and self._to_fire[0] + self._size - 1 <= watermark:
            start = heapq.heappop(self._to_fire)
            members = self._by_start.get(start, [])
            due = [s for s in members if self._fired[s] == 0]
            if due:
                fired.append(self._ordered(due))
        for slots in fired:
            self.emit(self._results(slots))
        lateness = self._step.allowed_lateness_ms
        while self._to_purge and self._to_purge[0] + self._size - 1 + lateness <= watermark:
            start = heapq.heappop(self._to_purge)
            for slot in self._by_start.pop(start, []):
                del self._slot_of[(self._key[slot], start)]
                self._key[slot] = None
                self._free.append(slot)

    def _ordered(self, slots: list[int]) -> npt.NDArray[np.int64]:
        """``slots`` in key order (the order a window's results are emitted in)."""
        keys = self._key[slots].tolist()
        if set(map(type, keys)) == {int}:
            try:
                order = np.argsort(np.array(keys, dtype=np.int64), kind="stable")
            except OverflowError:
                pass
            else:
                return np.array(slots, np.int64)[order]
        return np.array(sorted(slots, key=lambda s: _sort_key(self._key[s])), np.int64)

    def _results(self, slots: npt.NDArray[np.int64]) -> batch_mod.Batch:
        count = self._count[slots]
        how = self._step.how
        value: Any
        if how == "count":
            value = count
        elif how == "sum":
            value = self._sum[slots]
        elif how == "mean":
            value = pa.array(self._sum[slots] / np.maximum(count, 1), mask=count == 0)
        else:
            picked = self._min[slots] if how == "min" else self._max[slots]
            value = pa.array(picked, mask=count == 0)
        starts = self._start[slots]
        updates = self._fired[slots].copy()
        self._fired[slots] += 1
        return batch_mod.Batch.from_arrow(
            pa.record_batch(
                {
                    "key": pa.array(self._key[slots].tolist()),
                    "window_start": starts,
                    "window_end": starts + self._size,
                    self._step.output: value,
                    "update": updates,
                }
            )
        )

    # -- checkpoints --------------------------------------------------------------------

    def snapshot(self, builder: operators.SnapshotBuilder) -> None:
        # The barrier's part: copy the live slots' arrays (fancy indexing copies); the
        # key groups, the Arrow table and its bytes are made on the upload thread.
        live = np.fromiter(self._slot_of.values(), np.int64, len(self._slot_of))
        copy = _SlotsCopy(
            self.step_id,
            self._max_parallelism,
            self._range,
            self._key[live].tolist(),
            {name: getattr(self, "_" + name)[live] for name in _COLUMNS},
        )
        lo, hi = self._range
        builder.blobs.append(operators.keyed_blob(self.step_id, builder, copy.encode, lo, hi))

    def restore(self, blobs: Iterable[bytes]) -> None:
        for blob in blobs:
            table = keyed.read_table(blob)
            groups = table.column("key_group").to_numpy()
            mine = np.flatnonzero((groups >= self._range[0]) & (groups <= self._range[1]))
            table = table.take(pa.array(mine))
            keys = keyed.decode_column(table.column("key"))
            arrays = {name: table.column(name).to_numpy() for name in _COLUMNS}
            for i, key in enumerate(keys):
                slot = self._slot(key, int(arrays["start"][i]))
                for name in _COLUMNS:
                    getattr(self, "_" + name)[slot] = arrays[name][i]

    def watermark_restored(self, watermark: int) -> None:
        self.watermark = watermark


_COLUMNS = ("start", "count", "sum", "min", "max", "fired")
_SCHEMA = pa.schema(
    [
        ("key_group", pa.int32()),
        ("key", pa.binary()),
        ("start", pa.int64()),
        ("count", pa.int64()),
        ("sum", pa.float64()),
        ("min", pa.float64()),
        ("max", pa.float64()),
        ("fired", pa.int64()),
    ],
    metadata={keyed.FORMAT_KEY: keyed.FORMAT, keyed.CONTENT_KEY: b"window-slots"},
)


class _SlotsCopy:
    """The live windows as of a barrier, encoded on the upload thread."""

    def __init__(
        self,
        step_id: str,
        max_parallelism: int,
        key_group_range: tuple[int, int],
        keys: list[Any],
        arrays: dict[str, npt.NDArray[Any]],
    ) -> None:
        self._step_id = step_id
        self._max_parallelism = max_parallelism
        self._keys = keys
        self._arrays = arrays

    def encode(self) -> bytes:
        groups = key_groups.key_groups_for_keys(self._keys, self._max_parallelism)
        order = np.argsort(groups, kind="stable")
        columns: dict[str, Any] = {
            "key_group": pa.array(groups[order].astype(np.int32)),
            "key": keyed.encode_column(self._keys).take(pa.array(order)),
        }
        columns.update({name: pa.array(self._arrays[name][order]) for name in _COLUMNS})
        table = pa.table(columns, schema=_SCHEMA)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, _SCHEMA) as writer:
            writer.write_table(table)
        return bytes(sink.getvalue().to_pybytes())


def _filled(column: pa.ChunkedArray, fill: float) -> npt.NDArray[np.float64]:
    return np.asarray(column.fill_null(fill).to_numpy(), dtype=np.float64)


def _sort_key(key: Any) -> tuple[str, Any]:
    return (type(key).__name__, key)
