"""Vectorised windows: named counts, sums, minimums, maximums and means per key and window,
over whole Arrow batches.

Per batch
    1. event times of the whole batch and their windows (``assign_starts``);
    2. pairs whose window is closed (purge time reached by the watermark) are
       dropped; records with no open window go to the late side output;
    3. pyarrow groups the open pairs by ``(window start, key)`` and computes
       each group's record count and, per value column the aggregates read, the
       partial count, sum, min and max in C++ (one pass for every aggregate);
    4. per window start in the batch, the groups merge into that window's
       *pane* (:mod:`~barrier_runtime.state.window_panes`): one hash lookup of
       the whole key column, vectorised updates, new keys appended;
    5. groups whose window had already fired (allowed lateness) are emitted
       again at once, as updates.

On the watermark
    Windows fire per window start, all keys at once, as one Arrow batch
    (keys in sorted order); at ``end - 1 + allowed lateness`` their pane is
    dropped.

Checkpoints
    At the barrier the panes' arrays are copied; on the upload thread they
    become one Arrow table in the keyed-state format (content mark
    ``window-slots``), so snapshots split by key group and restore at any
    parallelism.

Session windows (which merge) have their own operator,
:mod:`~barrier_runtime.task.operators.session_agg`.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import steps, watermarks, windows
from barrier_runtime.state import pane_snapshots, window_panes
from barrier_runtime.task.operators import base, registry, session_agg


class WindowAggOperator(base.StatefulOperator):
    """``KeyedStream.window_agg``; see the module essay."""

    def __init__(
        self,
        step: steps.WindowAggStep,
        emit: base.Emit,
        emit_late: base.Emit | None,
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
        self._panes: window_panes.Panes | None = None
        """Created with the first batch (or restore): the value columns' types decide the dtypes."""
        self._to_fire: list[int] = []
        self._to_purge: list[int] = []

    # -- records ----------------------------------------------------------------------

    def process(self, batch: batch_mod.Batch, side: int) -> None:
        arrow = batch.to_arrow()
        times = self.event_times(batch, self._step.timestamps)
        rows, starts = self._step.assigner.assign_starts(times)
        keep = starts + (self._size - 1 + self._step.allowed_lateness_ms) > self.watermark
        self._late(arrow, rows, keep)
        if not keep.any():
            return
        rows, starts = rows[keep], starts[keep]
        taken = pa.array(rows)
        keys = arrow.column(self._key_column).take(taken)
        if pa.types.is_dictionary(keys.type):
            keys = keys.cast(keys.type.value_type)
        columns: dict[str, Any] = {"s": pa.array(starts), "k": keys}
        aggs: list[tuple[Any, ...]] = [([], "count_all")]
        value_types: dict[str, pa.DataType] = {}
        for i, column in enumerate(self._step.columns):
            values = arrow.column(column).take(taken)
            if pa.types.is_null(values.type):  # a batch of nulls only says nothing of the type
                values = values.cast(pa.int64())
            value_types[column] = values.type
            columns[f"v{i}"] = values
            aggs += [(f"v{i}", how) for how in window_panes.AGGREGATES]
        panes = self._panes_for(value_types)
        grouped = pa.table(columns).group_by(["s", "k"]).aggregate(aggs)
        group_starts = grouped.column("s").to_numpy()
        group_keys = grouped.column("k").combine_chunks()
        partials = self._partials(grouped, panes.dtypes)
        distinct = np.unique(group_starts)
        for start in distinct.tolist():
            picked = np.flatnonzero(group_starts == start) if len(distinct) > 1 else None
            pane = panes.get(start)
            if pane is None:
                pane = panes.pane(start)
                heapq.heappush(self._to_fire, start)
                heapq.heappush(self._to_purge, start)
            if picked is None:
                where = pane.merge(group_keys, partials)
            else:
                where = pane.merge(group_keys.take(pa.array(picked)), partials.take(picked))
            if start + self._size - 1 <= self.watermark:  # late but allowed: updates, now
                self.emit(self._results(start, pane, where))

    def _new_panes(self, dtypes: dict[str, np.dtype[Any]]) -> window_panes.Panes:
        return window_panes.Panes(dtypes, self._range, self._max_parallelism)

    def _panes_for(self, value_types: dict[str, pa.DataType]) -> window_panes.Panes:
        dtypes = {c: window_panes.value_dtype(t) for c, t in value_types.items()}
        if self._panes is None:
            self._panes = self._new_panes(dtypes)
        else:
            for column, dtype in dtypes.items():
                if dtype.kind == "f":
                    self._panes.widen(column, dtype)
        return self._panes

    def _partials(
        self, grouped: pa.Table, dtypes: dict[str, np.dtype[Any]]
    ) -> window_panes.Partials:
        values = {}
        for i, column in enumerate(self._step.columns):
            dtype = dtypes[column]
            lowest, highest = window_panes.identities(dtype)
            values[column] = window_panes.ValuePartials(
                _ints(grouped.column(f"v{i}_count")),
                _filled(grouped.column(f"v{i}_sum"), 0, dtype),
                _filled(grouped.column(f"v{i}_min"), highest, dtype),
                _filled(grouped.column(f"v{i}_max"), lowest, dtype),
            )
        return window_panes.Partials(_ints(grouped.column("count_all")), values)

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

    # -- firing -------------------------------------------------------------------------

    def on_watermark(self, watermark: int) -> None:
        self.watermark = watermark
        panes = self._panes
        while self._to_fire and self._to_fire[0] + self._size - 1 <= watermark:
            start = heapq.heappop(self._to_fire)
            pane = None if panes is None else panes.get(start)
            if pane is not None and len(pane):
                order = pane.key_order()
                due = order[pane.fired[order] == 0]
                if len(due):
                    self.emit(self._results(start, pane, due))
        lateness = self._step.allowed_lateness_ms
        while self._to_purge and self._to_purge[0] + self._size - 1 + lateness <= watermark:
            start = heapq.heappop(self._to_purge)
            if panes is not None:
                panes.drop(start)

    def _results(
        self, start: int, pane: window_panes.Pane, at: npt.NDArray[np.int64]
    ) -> batch_mod.Batch:
        assert pane.keys is not None
        fields: dict[str, Any] = {self._step.key_field: pane.keys.take(pa.array(at))}
        starts = np.full(len(at), start, np.int64)
        fields["window_start"] = starts
        fields["window_end"] = starts + self._size
        for aggregate in self._step.aggregates:
            fields[aggregate.name] = _result(aggregate, pane, at)
        fields["update"] = pane.fire(at)
        return batch_mod.Batch.from_arrow(pa.record_batch(fields))

    # -- checkpoints --------------------------------------------------------------------

    def snapshot(self, builder: base.SnapshotBuilder) -> None:
        # The barrier's part: copy the panes' arrays; the key groups, the Arrow table
        # and its bytes are made on the upload thread.
        if self._panes is None:  # kept: an incremental chain tracks this object's changes
            self._panes = self._new_panes({c: np.dtype(np.int64) for c in self._step.columns})
        base.add_keyed_state(builder, self.step_id, pane_snapshots.PanesState(self._panes))

    def restore(self, blobs: Iterable[bytes]) -> None:
        blobs = list(blobs)
        legacy = self._step.legacy_column
        if self._panes is None:
            dtypes = pane_snapshots.snapshot_dtypes(blobs, self._step.columns, legacy)
            self._panes = self._new_panes(dtypes)
        before = {start for start, _ in self._panes.items()}
        pane_snapshots.decode(blobs, self._range, self._panes, legacy)
        for start, _ in self._panes.items():
            if start not in before:
                heapq.heappush(self._to_fire, start)
                heapq.heappush(self._to_purge, start)

    def watermark_restored(self, watermark: int) -> None:
        self.watermark = watermark


def _result(
    aggregate: steps.WindowAggregate, pane: window_panes.Pane, at: npt.NDArray[np.int64]
) -> Any:
    """One aggregate's values at ``at``: null where the window held no value (min, max, mean)."""
    if aggregate.column is None:
        return pane.count[at]
    values = pane.values[aggregate.column]
    count = values.count[at]
    if aggregate.how == "count":
        return count
    if aggregate.how == "sum":
        return values.sum[at]
    if aggregate.how == "mean":
        return pa.array(values.sum[at] / np.maximum(count, 1), mask=count == 0)
    picked = values.min[at] if aggregate.how == "min" else values.max[at]
    return pa.array(picked, mask=count == 0)


def _ints(column: pa.ChunkedArray) -> npt.NDArray[np.int64]:
    return np.asarray(column.to_numpy(), dtype=np.int64)


def _filled(column: pa.ChunkedArray, fill: Any, dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    return np.asarray(column.fill_null(fill).to_numpy(), dtype=dtype)


@registry.register(steps.WindowAggStep)
def _window_agg(step: steps.WindowAggStep, ctx: registry.OperatorContext) -> base.Operator:
    kind = session_agg.SessionAggOperator if step.assigner.merging else WindowAggOperator
    return kind(step, ctx.emit, ctx.side_output, ctx.key_group_range, ctx.max_parallelism)
