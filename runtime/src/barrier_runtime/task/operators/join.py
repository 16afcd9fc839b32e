"""The interval join: two keyed inputs, records buffered per key until no match can come.

A left record at ``l`` matches right records of its key at ``r`` with
``l + lower <= r <= l + upper``; equivalently a right record at ``r`` matches
left records at ``r - upper <= l <= r - lower``.

State
    Per key ``[left, right]``, each a dict of event time to the records at
    that time, in a :class:`~barrier_runtime.state.keyed.KeyedState`.

Per record
    A record at or behind the watermark is late: dropped and counted (its
    matches could already have been cleaned up). Otherwise it is joined with
    the other side's buffered records in range (in time order, then arrival
    order), emitted pair by pair, and buffered itself.

Clean-up
    An event-time timer removes a buffered record once the watermark shows that
    no record of the other side can still match it: a left record at
    ``l + upper``, a right record at ``r - lower``. The timers follow from the
    buffers, so they are not stored; a restore rebuilds them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from barrier_runtime import task_failure
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import steps, watermarks
from barrier_runtime.state import keyed, timers
from barrier_runtime.task.operators import base, registry

EVENT = timers.Domain.EVENT_TIME
LEFT, RIGHT = 0, 1


class IntervalJoinOperator(base.StatefulOperator):
    """``KeyedStream.interval_join``; see the module essay."""

    def __init__(
        self,
        step: steps.IntervalJoinStep,
        emit: base.Emit,
        key_group_range: tuple[int, int],
        max_parallelism: int,
    ) -> None:
        super().__init__(step.step_id, emit)
        self._step = step
        self._key_fns = [base.key_fn_of(inp) for inp in step.inputs]
        self.state = keyed.KeyedState(key_group_range, max_parallelism)
        self._timers = timers.TimerService(key_group_range, max_parallelism)
        self.watermark = watermarks.MIN_WATERMARK
        self.late_dropped = 0

    def process(self, batch: batch_mod.Batch, side: int) -> None:
        times = self.event_times(batch, self._step.timestamps[side]).tolist()
        key_fn, out = self._key_fns[side], []
        for record, ts in zip(batch.rows(), times, strict=True):
            if ts <= self.watermark:
                self.late_dropped += 1
                continue
            key = key_fn(record)
            sides = self.state.values.get(key) or [{}, {}]
            lo, hi = self._range(side, ts)
            other = sides[1 - side]
            for when in sorted(t for t in other if lo <= t <= hi):
                for match in other[when]:
                    pair = (record, match) if side == LEFT else (match, record)
                    out.append(self._join(key, *pair))
            sides[side].setdefault(ts, []).append(record)
            self.state.values[key] = sides
            self.state.mark(key)
            self._timers.register(EVENT, key, self._cleanup_time(side, ts), (side, ts))
        if out:
            self.emit(batch_mod.Batch.from_rows(out))

    def _range(self, side: int, ts: int) -> tuple[int, int]:
        """The other side's event times a record of ``side`` at ``ts`` matches."""
        lower, upper = self._step.lower_ms, self._step.upper_ms
        return (ts + lower, ts + upper) if side == LEFT else (ts - upper, ts - lower)

    def _cleanup_time(self, side: int, ts: int) -> int:
        """When the watermark there, no record of the other side can still match."""
        return ts + self._step.upper_ms if side == LEFT else ts - self._step.lower_ms

    def _join(self, key: Any, left: batch_mod.Record, right: batch_mod.Record) -> batch_mod.Record:
        fn = self._step.fn
        if fn is None:
            return {"key": key, "left": left, "right": right}
        try:
            return fn(left, right)
        except Exception as exc:
            raise task_failure.UserFunctionError(
                self.step_id, {"left": left, "right": right}, exc
            ) from exc

    def on_watermark(self, watermark: int) -> None:
        self.watermark = watermark
        for timer in self._timers.pop_due(EVENT, watermark):
            side, ts = timer.namespace
            sides = self.state.values.get(timer.key)
            if sides is None:
                continue
            sides[side].pop(ts, None)
            if not sides[LEFT] and not sides[RIGHT]:
                del self.state.values[timer.key]
            self.state.mark(timer.key)

    def snapshot(self, builder: base.SnapshotBuilder) -> None:
        base.add_keyed_state(builder, self.step_id, self.state)

    def restore(self, blobs: Iterable[bytes]) -> None:
        self.state.restore(blobs)
        for key, sides in self.state.values.items():
            restored = [{int(t): list(rs) for t, rs in sides[s].items()} for s in (LEFT, RIGHT)]
            self.state.values[key] = restored
            for side in (LEFT, RIGHT):
                for ts in restored[side]:
                    self._timers.register(EVENT, key, self._cleanup_time(side, ts), (side, ts))

    def watermark_restored(self, watermark: int) -> None:
        self.watermark = watermark


@registry.register(steps.IntervalJoinStep)
def _interval_join(step: steps.IntervalJoinStep, ctx: registry.OperatorContext) -> base.Operator:
    return IntervalJoinOperator(step, ctx.emit, ctx.key_group_range, ctx.max_parallelism)
