"""The window operator: per key, per window state that fires when the watermark passes.

State
    Per key a dict ``{(start, end): [contents, firings]}`` in a
    :class:`~barrier_runtime.state.keyed.KeyedState`. The contents are an
    accumulator (``aggregate=``) or the window's records (``process=``);
    ``firings`` counts how often the window fired. Snapshots, key groups and
    rescaling are those of any keyed state.

Timers
    Two event-time timers per live window: *fire* at its ``max_timestamp`` and
    *purge* at ``max_timestamp + allowed lateness`` (namespaces
    ``(start, end, 0)`` and ``(start, end, 1)``, so at equal times a window
    fires before it is purged). They follow from the state alone, so they are
    not stored: a restore rebuilds them.

Per record
    The record's event time gives its windows. A window whose purge time the
    watermark has reached is closed: the record skips it. A record that finds
    every window closed is *late* and goes to the side output (or is counted
    and dropped). A record added to a window that has already fired (within
    the allowed lateness) fires it again at once, as an update. Sessions merge
    first: the new window absorbs every session of the key it touches.

On the watermark
    Due timers fire in ``(time, key, window)`` order: the output is
    deterministic, whatever the parallelism.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from barrier_runtime import task_failure
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import steps, watermarks, windows
from barrier_runtime.state import keyed, timers
from barrier_runtime.task.operators import base, registry

_FIRE, _PURGE = 0, 1
EVENT = timers.Domain.EVENT_TIME
Slot = tuple[int, int]
"""A window as stored: ``(start, end)``."""


class WindowOperator(base.StatefulOperator):
    """``KeyedStream.window``; see the module essay."""

    def __init__(
        self,
        step: steps.WindowStep,
        emit: base.Emit,
        emit_late: base.Emit | None,
        key_group_range: tuple[int, int],
        max_parallelism: int,
    ) -> None:
        super().__init__(step.step_id, emit)
        self._step = step
        self._emit_late = emit_late
        self._key_fn = base.key_fn_of(step.input)
        self.state = keyed.KeyedState(key_group_range, max_parallelism)
        self._timers = timers.TimerService(key_group_range, max_parallelism)
        self.watermark = watermarks.MIN_WATERMARK
        self.late_dropped = 0
        """Late records dropped because the step has no side output."""

    # -- records ----------------------------------------------------------------------

    def process(self, batch: batch_mod.Batch, side: int) -> None:
        times = self.event_times(batch, self._step.timestamps).tolist()
        late: list[batch_mod.Record] = []
        out: list[batch_mod.Record] = []
        assign = self._step.assigner.assign
        for record, ts in zip(batch.rows(), times, strict=True):
            key = self._key_fn(record)
            placed = False
            for window in assign(ts):
                if self._closed(window):
                    continue
                placed = True
                self._add(key, window, record, out)
            if not placed:
                late.append(record)
        if out:
            self.emit(batch_mod.Batch.from_rows(out))
        if late:
            if self._emit_late is not None:
                self._emit_late(batch_mod.Batch.from_rows(late))
            else:
                self.late_dropped += len(late)

    def _closed(self, window: windows.Window) -> bool:
        return window.max_timestamp + self._step.allowed_lateness_ms <= self.watermark

    def _add(
        self,
        key: Any,
        window: windows.Window,
        record: batch_mod.Record,
        out: list[batch_mod.Record],
    ) -> None:
        held: dict[Slot, list[Any]] = self.state.values.get(key) or {}
        if self._step.assigner.merging:
            window, contents, firings = self._merge_into(key, held, window)
        else:
            contents, firings = held.get((window.start, window.end), (self._empty(), 0))
        contents = self._fold(contents, record)
        held[(window.start, window.end)] = [contents, firings]
        self.state.values[key] = held
        self.state.mark(key)
        reached = window.max_timestamp <= self.watermark
        self._arm(key, window, fire=not reached)
        if reached:  # late but allowed: an update, now (its fire timer has gone off)
            out.extend(self._fire(key, window))

    def _merge_into(
        self, key: Any, held: dict[Slot, list[Any]], window: windows.Window
    ) -> tuple[windows.Window, Any, int]:
        existing = [windows.Window(s, e) for s, e in held]
        merged, absorbed = windows.merge_session(existing, window)
        contents, firings = self._empty(), 0
        for old in absorbed:
            old_contents, old_firings = held.pop((old.start, old.end))
            contents = self._combine(contents, old_contents)
            firings = max(firings, old_firings)
            self._disarm(key, old)
        return merged, contents, firings

    # -- firing -------------------------------------------------------------------------

    def on_watermark(self, watermark: int) -> None:
        self.watermark = watermark
        out: list[batch_mod.Record] = []
        for timer in self._timers.pop_due(EVENT, watermark):
            start, end, what = timer.namespace
            window = windows.Window(start, end)
            if what == _FIRE:
                out.extend(self._fire(timer.key, window))
            else:
                self._purge(timer.key, window)
        if out:
            self.emit(batch_mod.Batch.from_rows(out))

    def _fire(self, key: Any, window: windows.Window) -> list[batch_mod.Record]:
        held = self.state.values.get(key)
        slot = held.get((window.start, window.end)) if held else None
        if slot is None:
            return []
        contents, firings = slot
        slot[1] = firings + 1
        self.state.mark(key)
        step = self._step
        base = {step.key_field: key, "window_start": window.start, "window_end": window.end}
        try:
            if step.aggregate is not None:
                result = step.aggregate.result(contents)
                fields = result if step.output is None else {step.output: result}
                return [{**base, **fields, "update": firings}]
            assert step.process is not None
            return [{**r, "update": firings} for r in step.process(key, window, list(contents))]
        except Exception as exc:
            raise task_failure.UserFunctionError(self.step_id, base, exc) from exc

    def _purge(self, key: Any, window: windows.Window) -> None:
        held = self.state.values.get(key)
        if held is None:
            return
        held.pop((window.start, window.end), None)
        if not held:
            del self.state.values[key]
        self.state.mark(key)

    def _arm(self, key: Any, window: windows.Window, *, fire: bool) -> None:
        """Set the window's purge timer and, with ``fire``, its fire timer."""
        for when, what in self._timer_times(window):
            if fire or what == _PURGE:
                self._timers.register(EVENT, key, when, (window.start, window.end, what))

    def _disarm(self, key: Any, window: windows.Window) -> None:
        for when, what in self._timer_times(window):
            self._timers.delete(EVENT, key, when, (window.start, window.end, what))

    def _timer_times(self, window: windows.Window) -> tuple[tuple[int, int], tuple[int, int]]:
        fire = window.max_timestamp
        return (fire, _FIRE), (fire + self._step.allowed_lateness_ms, _PURGE)

    # -- contents -----------------------------------------------------------------------

    def _empty(self) -> Any:
        agg = self._step.aggregate
        return agg.create() if agg is not None else []

    def _fold(self, contents: Any, record: batch_mod.Record) -> Any:
        agg = self._step.aggregate
        if agg is None:
            contents.append(record)  # a snapshot encodes its copy at the barrier
            return contents
        try:
            return agg.add(contents, record)
        except Exception as exc:
            raise task_failure.UserFunctionError(self.step_id, record, exc) from exc

    def _combine(self, a: Any, b: Any) -> Any:
        agg = self._step.aggregate
        return [*a, *b] if agg is None else agg.merge(a, b)

    # -- checkpoints --------------------------------------------------------------------

    def snapshot(self, builder: base.SnapshotBuilder) -> None:
        base.add_keyed_state(builder, self.step_id, self.state)

    def restore(self, blobs: Iterable[bytes]) -> None:
        self.state.restore(blobs)
        for key, held in self.state.values.items():
            restored = {(int(s), int(e)): [c, int(f)] for (s, e), (c, f) in held.items()}
            self.state.values[key] = restored
            for (start, end), (_, firings) in restored.items():
                window = windows.Window(start, end)
                self._arm(key, window, fire=firings == 0 or window.max_timestamp > self.watermark)

    def watermark_restored(self, watermark: int) -> None:
        """Resume at the restored input watermark (nothing fires: it fired before).

        Called before :meth:`restore`, which arms no fire timer for a window that
        already fired at or below it."""
        self.watermark = watermark


@registry.register(steps.WindowStep)
def _window(step: steps.WindowStep, ctx: registry.OperatorContext) -> base.Operator:
    return WindowOperator(step, ctx.emit, ctx.side_output, ctx.key_group_range, ctx.max_parallelism)
