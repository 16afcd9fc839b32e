"""The keyed process operator: per-key state plus event-time and processing-time timers.

Records go to ``on_record(state, record, ctx)``; due timers to
``on_timer(state, timer, ctx)``. Event-time timers fire when the input
watermark reaches them (:meth:`ProcessOperator.on_watermark`), before the
watermark moves on; a timer registered while timers fire, at or below the
watermark, fires in the same round. Processing-time timers fire from the
subtask loop (:meth:`ProcessOperator.on_processing_time`), which also learns
when the next one is due.

Both the values and the timers are keyed state objects of the step (the
timers' marked ``timers``), so they are snapshotted, split by key group and
restored at another parallelism alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from barrier_runtime import task_failure
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import process, steps, watermarks
from barrier_runtime.core import clock as clocks
from barrier_runtime.state import keyed, timers
from barrier_runtime.task.operators import base, registry

EVENT, PROCESSING = timers.Domain.EVENT_TIME, timers.Domain.PROCESSING_TIME


class _Context(process.ProcessContext):
    def __init__(self, op: ProcessOperator) -> None:
        self._op = op
        self.current_key: Any = None
        self.current_time: int | None = None

    @property
    def key(self) -> Any:
        return self.current_key

    @property
    def timestamp(self) -> int | None:
        return self.current_time

    @property
    def watermark(self) -> int:
        return self._op.watermark

    @property
    def processing_time(self) -> int:
        return int(self._op.clock.now() * 1000)

    def register_event_time_timer(self, time: int) -> None:
        self._op.timers.register(EVENT, self.current_key, time)

    def register_processing_time_timer(self, time: int) -> None:
        self._op.timers.register(PROCESSING, self.current_key, time)

    def delete_event_time_timer(self, time: int) -> None:
        self._op.timers.delete(EVENT, self.current_key, time)

    def delete_processing_time_timer(self, time: int) -> None:
        self._op.timers.delete(PROCESSING, self.current_key, time)


class ProcessOperator(base.StatefulOperator):
    """``KeyedStream.process``; see the module essay."""

    def __init__(
        self,
        step: steps.ProcessStep,
        emit: base.Emit,
        key_group_range: tuple[int, int],
        max_parallelism: int,
        clock: clocks.Clock,
    ) -> None:
        super().__init__(step.step_id, emit)
        self._step = step
        self._key_fn = base.key_fn_of(step.input)
        self.clock = clock
        self.state = keyed.KeyedState(key_group_range, max_parallelism)
        self.timers = timers.TimerService(key_group_range, max_parallelism)
        self.watermark = watermarks.MIN_WATERMARK
        self._ctx = _Context(self)

    def process(self, batch: batch_mod.Batch, side: int) -> None:
        rows = batch.rows()
        times: list[int | None]
        if self._step.timestamps is None:
            times = [None] * len(rows)
        else:
            times = list(self.event_times(batch, self._step.timestamps).tolist())
        out: list[batch_mod.Record] = []
        on_record, ctx, held = self._step.on_record, self._ctx, self.state
        for record, ts in zip(rows, times, strict=True):
            ctx.current_key, ctx.current_time = self._key_fn(record), ts
            try:
                new, emitted = on_record(held.get(ctx.current_key), record, ctx)
                emitted = list(emitted)
            except Exception as exc:
                raise task_failure.UserFunctionError(self.step_id, record, exc) from exc
            held.put(ctx.current_key, new)
            out.extend(emitted)
        if out:
            self.emit(batch_mod.Batch.from_rows(out))

    def on_watermark(self, watermark: int) -> None:
        self.watermark = watermark
        self._fire(EVENT, watermark)

    def on_processing_time(self, now_ms: int) -> int | None:
        """Fire the processing-time timers due at ``now_ms``; the next one's time, if any."""
        self._fire(PROCESSING, now_ms)
        return self.timers.next_time(PROCESSING)

    def _fire(self, domain: timers.Domain, until: int) -> None:
        on_timer, ctx, out = self._step.on_timer, self._ctx, []
        while due := self.timers.pop_due(domain, until):
            for timer in due:
                if on_timer is None:
                    continue
                ctx.current_key, ctx.current_time = timer.key, timer.time
                try:
                    new, emitted = on_timer(self.state.get(timer.key), timer, ctx)
                    emitted = list(emitted)
                except Exception as exc:
                    sample = {"key": timer.key, "timer": timer.time}
                    raise task_failure.UserFunctionError(self.step_id, sample, exc) from exc
                self.state.put(timer.key, new)
                out.extend(emitted)
        if out:
            self.emit(batch_mod.Batch.from_rows(out))

    def snapshot(self, builder: base.SnapshotBuilder) -> None:
        base.add_keyed_state(builder, self.step_id, self.state)
        base.add_keyed_state(builder, self.step_id, self.timers.state, ".timers")

    def restore(self, blobs: Iterable[bytes]) -> None:
        values: list[bytes] = []
        pending: list[bytes] = []
        for blob in blobs:
            (pending if keyed.content_of(blob) == timers.CONTENT else values).append(blob)
        self.state.restore(values)
        self.timers.restore(pending)

    def watermark_restored(self, watermark: int) -> None:
        self.watermark = watermark


@registry.register(steps.ProcessStep)
def _process(step: steps.ProcessStep, ctx: registry.OperatorContext) -> base.Operator:
    return ProcessOperator(step, ctx.emit, ctx.key_group_range, ctx.max_parallelism, ctx.clock)
