"""Vectorised session windows: ``window_agg`` with :class:`~barrier_runtime.api.windows.Session`.

Per batch
    1. event times of the whole batch; a record whose own session
       ``[t, t + gap)`` is closed (``t + gap - 1 + allowed lateness`` reached by
       the watermark) is late: side output, or counted and dropped;
    2. the open sessions of the batch's keys (one ``is_in`` over the session
       keys) and the batch's records, each a one-record session, merge in one
       sort by ``(key, start)`` and a few NumPy ``reduceat``
       (:func:`~barrier_runtime.state.session_windows.merge_sessions`); the
       merged sessions replace the ones they came from (killed and appended in
       :class:`~barrier_runtime.state.open_sessions.OpenSessions`, so a batch
       costs what it touches, not a copy of every open session);
    3. a merged session that took a record and whose end the watermark has
       already passed (allowed lateness) is emitted again at once, as an update
       (once per batch, as ``window_agg`` does for tumbling windows).

On the watermark
    A session fires when the watermark reaches ``end - 1``: every session of
    every key due since the last watermark, in one Arrow batch, in ``(end,
    key)`` order (the order the per-record ``window`` fires its timers in). A
    session whose end the watermark has passed has fired (step 3 fires the
    ones that grow later), so the due ones are those with ``end - 1`` between
    the previous watermark and this one; no per-session timer is kept, only
    the smallest end, which makes a watermark that passes nothing cost
    nothing. At ``end - 1 + allowed lateness`` the session is dropped.

Checkpoints
    At the barrier the session arrays are copied; on the upload thread they
    become one Arrow table in the keyed-state format (content mark
    ``session-slots``), split by key group, restored at any parallelism.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import steps, watermarks, windows
from barrier_runtime.state import open_sessions, window_panes
from barrier_runtime.state import session_windows as sessions_mod
from barrier_runtime.task.operators import base

_NO_END = np.iinfo(np.int64).max


class SessionAggOperator(base.StatefulOperator):
    """``KeyedStream.window_agg`` with session windows; see the module essay."""

    def __init__(
        self,
        step: steps.WindowAggStep,
        emit: base.Emit,
        emit_late: base.Emit | None,
        key_group_range: tuple[int, int],
        max_parallelism: int,
    ) -> None:
        super().__init__(step.step_id, emit)
        assert isinstance(step.assigner, windows.Session)
        assert step.input.key_column is not None
        self._step = step
        self._key_column = step.input.key_column
        self._gap = step.assigner.gap_ms
        self._lateness = step.allowed_lateness_ms
        self._emit_late = emit_late
        self._range = key_group_range
        self._max_parallelism = max_parallelism
        self.watermark = watermarks.MIN_WATERMARK
        self.late_dropped = 0
        self._how = sessions_mod.reducers(step.columns) | {"fresh": "max"}
        int64s = {c: np.dtype(np.int64) for c in step.columns}
        self._open = open_sessions.OpenSessions(sessions_mod.empty(step.columns, int64s))
        self._lowest_end = _NO_END
        """At most the smallest open session end: a watermark below it passes no session."""

    # -- records ----------------------------------------------------------------------

    def process(self, batch: batch_mod.Batch, side: int) -> None:
        arrow = batch.to_arrow()
        if not arrow.num_rows:
            return
        times = self.event_times(batch, self._step.timestamps)
        ends = times + self._gap
        keep = ends - 1 + self._lateness > self.watermark
        if not keep.all():
            self._late(arrow, np.flatnonzero(~keep))
            if not keep.any():
                return
            arrow, times, ends = arrow.filter(pa.array(keep)), times[keep], ends[keep]
        keys = arrow.column(self._key_column)
        if pa.types.is_dictionary(keys.type):
            keys = keys.cast(keys.type.value_type)
        n = len(times)
        records: sessions_mod.Columns = {
            "start": times,
            "end": ends,
            "count": np.ones(n, np.int64),
            "fired": np.zeros(n, np.int64),
        }
        for column in self._step.columns:
            records |= self._values(column, arrow.column(column))
        records["fresh"] = np.ones(n, np.int64)
        table = self._open
        if table.key_type is not None and keys.type != table.key_type:
            keys = keys.cast(table.key_type)
        touched = table.find(keys)
        old = {name: table.column(name)[touched] for name in table.names()}
        old["fresh"] = np.zeros(len(touched), np.int64)
        old_keys = table.keys().take(pa.array(touched)).combine_chunks() if len(touched) else None
        merged_keys, merged = sessions_mod.merge_sessions(
            keys if old_keys is None else pa.concat_arrays([old_keys, keys]),
            sessions_mod.concat(old, records),
            self._how,
        )
        fresh = merged.pop("fresh") > 0
        table.kill(touched)
        table.compact()
        at = table.append(merged_keys, merged)
        self._lowest_end = min(self._lowest_end, int(merged["end"].min()))
        # late but allowed: a session that took a record after the watermark passed its end
        reached = at[fresh & (merged["end"] - 1 <= self.watermark)]
        if len(reached):
            self.emit(self._results(reached))

    def _values(self, column: str, values: pa.ChunkedArray | pa.Array) -> sessions_mod.Columns:
        """One record's partials of ``column``: its count of values (0 for null), sum, min, max."""
        if pa.types.is_null(values.type):  # a batch of nulls only says nothing of the type
            values = values.cast(pa.int64())
        dtype = window_panes.value_dtype(values.type)
        if dtype.kind == "f":
            self._open.widen(column, dtype)
        dtype = self._open.dtype(f"{column}:sum")
        lowest, highest = window_panes.identities(dtype)
        present = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)

        def filled(fill: Any) -> npt.NDArray[Any]:
            return np.asarray(values.fill_null(fill).to_numpy(), dtype=dtype)

        return {
            f"{column}:count": present.astype(np.int64),
            f"{column}:sum": filled(0),
            f"{column}:min": filled(highest),
            f"{column}:max": filled(lowest),
        }

    def _late(self, arrow: pa.RecordBatch, late: npt.NDArray[np.intp]) -> None:
        if self._emit_late is None:
            self.late_dropped += len(late)
        else:
            self._emit_late(batch_mod.Batch.from_arrow(arrow.take(pa.array(late))))

    # -- firing -------------------------------------------------------------------------

    def on_watermark(self, watermark: int) -> None:
        previous, self.watermark = self.watermark, watermark
        if self._lowest_end - 1 > watermark:
            return
        table = self._open
        alive, last = table.alive_rows(), table.column("end") - 1
        due = np.flatnonzero(alive & (last <= watermark) & (last > previous))
        if len(due):
            order = pc.sort_indices(
                pa.table({"e": last[due], "k": table.keys().take(pa.array(due))}),
                sort_keys=[("e", "ascending"), ("k", "ascending")],
            )
            self.emit(self._results(due[order.to_numpy()]))
        table.kill(np.flatnonzero(alive & (last + self._lateness <= watermark)))
        table.compact()
        self._lowest_end = self._lowest_open_end()

    def _lowest_open_end(self) -> int:
        ends = self._open.column("end")[self._open.alive_rows()]
        return int(ends.min()) if len(ends) else _NO_END

    def _results(self, at: npt.NDArray[np.intp]) -> batch_mod.Batch:
        table = self._open
        fields: dict[str, Any] = {
            self._step.key_field: table.keys().take(pa.array(at)).combine_chunks(),
            "window_start": table.column("start")[at],
            "window_end": table.column("end")[at],
        }
        for aggregate in self._step.aggregates:
            fields[aggregate.name] = _result(aggregate, table, at)
        fired = table.column("fired")
        fields["update"] = fired[at].copy()
        fired[at] += 1
        table.touch(at)
        return batch_mod.Batch.from_arrow(pa.record_batch(fields))

    # -- checkpoints --------------------------------------------------------------------

    def snapshot(self, builder: base.SnapshotBuilder) -> None:
        state = open_sessions.SessionsState(self._open, self._range, self._max_parallelism)
        base.add_keyed_state(builder, self.step_id, state)

    def restore(self, blobs: Iterable[bytes]) -> None:
        """Load whole objects and deltas in order: a delta's sessions replace every session
        of their keys, and its deleted keys lose theirs."""
        table = self._open
        for part in sessions_mod.decode(blobs, self._range):
            if part.delta:
                replaced = part.keys + part.deleted
                if replaced and len(table):
                    table.kill(table.find(_key_array(replaced, table.key_type)))
            if not part.keys:
                continue
            for column in self._step.columns:
                dtype = part.columns[f"{column}:sum"].dtype
                if dtype.kind == "f":
                    table.widen(column, dtype)
            table.append(_key_array(part.keys, table.key_type), part.columns)
        table.compact(force=True)
        self._lowest_end = self._lowest_open_end()

    def watermark_restored(self, watermark: int) -> None:
        """Resume at the restored input watermark: the sessions it passed fired before."""
        self.watermark = watermark


def _result(
    aggregate: steps.WindowAggregate, table: open_sessions.OpenSessions, at: npt.NDArray[np.intp]
) -> Any:
    """One aggregate's values at ``at``: null where the session held no value (min, max, mean)."""
    if aggregate.column is None:
        return table.column("count")[at]
    count = table.column(f"{aggregate.column}:count")[at]
    if aggregate.how == "count":
        return count
    if aggregate.how == "sum":
        return table.column(f"{aggregate.column}:sum")[at]
    if aggregate.how == "mean":
        mean = table.column(f"{aggregate.column}:sum")[at] / np.maximum(count, 1)
        return pa.array(mean, mask=count == 0)
    return pa.array(table.column(f"{aggregate.column}:{aggregate.how}")[at], mask=count == 0)


def _key_array(keys: list[Any], key_type: pa.DataType | None) -> pa.Array:
    """Restored keys as an Arrow array of the table's key type (once it has one)."""
    array = pa.array(keys)
    return array if key_type is None or array.type == key_type else array.cast(key_type)
