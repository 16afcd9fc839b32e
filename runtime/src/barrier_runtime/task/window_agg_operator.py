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
    The live slots are written as keyed state (key to ``{start: [count, sum,
    min, max, firings]}``), so snapshots split by key group and restore at
    any parallelism like every keyed state.
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
from barrier_runtime.state import keyed
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
        self._key: list[Any] = []
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
        slots = np.fromiter(
            (self._slot(k, s) for k, s in zip(keys, group_starts.tolist(), strict=True)),
            np.int64,
            len(keys),
        )
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

    def _slot(self, key: Any, start: int) -> int:
        slot = self._slot_of.get((key, start))
        if slot is not None:
            return slot
        if not self._free:
            self._grow()
        slot = self._free.pop()
        self._slot_of[(key, start)] = slot
        self._key[slot] = key
        self._start[slot] = start
        self._count[slot], self._sum[slot], self._fired[slot] = 0, 0.0, 0
        self._min[slot], self._max[slot] = np.inf, -np.inf
        members = self._by_start.get(start)
        if members is None:
            self._by_start[start] = members = []
            heapq.heappush(self._to_fire, start)
            heapq.heappush(self._to_purge, start)
        members.append(slot)
        return slot

    def _grow(self) -> None:
        old = len(self._key)
        new = max(1024, old * 2)
        self._key.extend([None] * (new - old))
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
                    "key": pa.array([self._key[s] for s in slots.tolist()]),
                    "window_start": starts,
                    "window_end": starts + self._size,
                    self._step.output: value,
                    "update": updates,
                }
            )
        )

    # -- checkpoints --------------------------------------------------------------------

    def snapshot(self, builder: operators.SnapshotBuilder) -> None:
        state = keyed.KeyedState(self._range, self._max_parallelism)
        for (key, start), slot in self._slot_of.items():
            held = state.values.setdefault(key, {})
            held[start] = [
                int(self._count[slot]),
                float(self._sum[slot]),
                float(self._min[slot]),
                float(self._max[slot]),
                int(self._fired[slot]),
            ]
        copy = state.snapshot_copy(self.step_id)
        start, end = state.start, state.end
        builder.blobs.append(operators.keyed_blob(self.step_id, builder, copy.encode, start, end))

    def restore(self, blobs: Iterable[bytes]) -> None:
        state = keyed.KeyedState(self._range, self._max_parallelism)
        state.restore(blobs)
        for key, held in state.values.items():
            for start, (count, total, low, high, fired) in held.items():
                slot = self._slot(key, int(start))
                self._count[slot], self._sum[slot] = count, total
                self._min[slot], self._max[slot], self._fired[slot] = low, high, fired

    def watermark_restored(self, watermark: int) -> None:
        self.watermark = watermark


def _filled(column: pa.ChunkedArray, fill: float) -> npt.NDArray[np.float64]:
    return np.asarray(column.fill_null(fill).to_numpy(), dtype=np.float64)


def _sort_key(key: Any) -> tuple[str, Any]:
    return (type(key).__name__, key)
