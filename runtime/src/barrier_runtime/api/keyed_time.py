"""The event-time steps of a keyed stream: windows, vectorised windows, timers, interval joins.

:class:`EventTimeSteps` is a part of :class:`~barrier_runtime.api.streams.KeyedStream`
(it holds no state of its own); it lives here to keep ``streams.py`` focused on
the core steps. See ``docs/event-time.md`` for the whole story.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import building, event_time, window_fields
from barrier_runtime.api import steps as defs
from barrier_runtime.api import windows as windows_mod
from barrier_runtime.core import types

S = TypeVar("S")
"""The stream type a step returns (:class:`~barrier_runtime.api.streams.Stream`)."""
W = TypeVar("W")
"""The stream type a window step returns (:class:`~barrier_runtime.api.streams.WindowedStream`)."""


class EventTimeSteps(Generic[S, W]):
    """Windows, ``window_agg``, ``process`` and ``interval_join`` of a keyed stream.

    Generic in the stream types it returns, so that this module imports none of the
    modules that use it.
    """

    __slots__ = ()
    flow: building.StepGraph
    step_id: types.StepId
    key_column: str | None
    _keyed_input: Callable[[str], defs.Input]
    """KeyedStream's: this step's input from the stream, keyed."""
    _stream: Callable[[types.StepId], S]
    """KeyedStream's: the stream of the step just added."""
    _windowed_stream: Callable[[types.StepId], W]
    """KeyedStream's: the stream of the window step just added."""

    def process(
        self,
        step_id: str,
        on_record: Callable[[Any, batch_mod.Record, Any], tuple[Any, Iterable[batch_mod.Record]]],
        on_timer: Callable[[Any, Any, Any], tuple[Any, Iterable[batch_mod.Record]]] | None = None,
        *,
        timestamps: event_time.Timestamps | None = None,
    ) -> S:
        """Per key state and timers: ``on_record(state, record, ctx) -> (state, records)``
        and ``on_timer(state, timer, ctx) -> (state, records)`` (see
        :class:`~barrier_runtime.api.process.ProcessContext`). Timers are kept per key
        in checkpoints and follow their keys when the job is rescaled; due
        event-time timers fire, in time then key order, before the watermark moves on.
        """
        added = self.flow._add(
            defs.ProcessStep(
                self.flow._new_id(step_id),
                self._keyed_input(step_id),
                on_record,
                on_timer,
                timestamps,
            )
        )
        return self._stream(added)

    def window(
        self,
        step_id: str,
        assigner: windows_mod.WindowAssigner,
        *,
        timestamps: event_time.Timestamps | None = None,
        aggregate: windows_mod.AggregateFunction[Any]
        | Mapping[str, windows_mod.AggregateFunction[Any]]
        | None = None,
        process: defs.WindowFn | None = None,
        output: str | None = None,
        allowed_lateness_ms: int = 0,
    ) -> W:
        """Event-time windows per key, fired when the watermark passes their end.

        Give ``aggregate`` or ``process`` (``fn(key, window, records) -> records``,
        called with the whole window). ``aggregate`` names one result field per
        aggregate (``{"clicks": count(), "spend": sum_of("v")}``, each folded record by
        record); each firing then emits ``{<key column>: key, "window_start",
        "window_end", "clicks": …, "spend": …, "update": n}``, the key in a field named
        after the column the stream is keyed by (``"key"`` when keyed by a function).
        A single aggregate (``aggregate=count()``) keeps the earlier shape:
        ``{"key", "window_start", "window_end", output: value, "update": n}`` (``output``
        defaults to ``"value"``). ``n`` counts earlier firings of the window: records up
        to ``allowed_lateness_ms`` late update it. Records later than that are dropped,
        or sent to :meth:`WindowedStream.late`. The stream needs watermarks: a source
        with ``timestamps=`` and ``watermarks=``; this step reads event time as the
        sources declared it, unless given its own ``timestamps``.

        >>> from barrier_runtime.api.watermarks import BoundedOutOfOrderness
        >>> from barrier_runtime.api.windows import Tumbling, count, sum_of
        >>> from barrier_runtime.testing import TestingSink, TestingSource
        >>> from barrier_runtime.api import Dataflow
        >>> flow = Dataflow("per-minute")
        >>> clicks = flow.source("clicks", TestingSource([{"user": "a", "ts": 5, "v": 2}]),
        ...                      timestamps="ts", watermarks=BoundedOutOfOrderness(1_000))
        >>> per_user = clicks.key_by("by-user", "user").window(
        ...     "per-user", Tumbling(60_000),
        ...     aggregate={"clicks": count(), "spend": sum_of("v")})
        >>> per_user.sink("out", TestingSink())
        >>> per_user.late("late-clicks").sink("late", TestingSink())
        >>> flow.validate()
        """
        if (aggregate is None) == (process is None):
            raise building.InvalidDataflowError(
                f"step {step_id!r}: a window needs exactly one of aggregate= and process="
            )
        if not isinstance(assigner, windows_mod.WindowAssigner):
            raise building.InvalidDataflowError(
                f"step {step_id!r}: {type(assigner).__name__} is not a window assigner "
                "(Tumbling, Sliding or Session)"
            )
        key_field = "key"
        fold: windows_mod.AggregateFunction[Any] | None
        if isinstance(aggregate, Mapping):
            self._no_output(step_id, output)
            key_field = self.key_column or "key"
            fold, field = window_fields.named(step_id, aggregate, key_field), None
        else:
            fold, field = aggregate, output or "value"
        times = self._timestamps(step_id, timestamps)
        return self._windowed(
            step_id,
            allowed_lateness_ms,
            lambda sid, inp: defs.WindowStep(
                sid, inp, assigner, times, fold, process, field, allowed_lateness_ms, key_field
            ),
        )

    def window_agg(
        self,
        step_id: str,
        assigner: windows_mod.WindowAssigner,
        *,
        timestamps: str | None = None,
        aggregate: Mapping[str, windows_mod.AggregateFunction[Any]] | None = None,
        how: defs.WindowHow | None = None,
        column: str | None = None,
        output: str | None = None,
        allowed_lateness_ms: int = 0,
    ) -> W:
        """Like :meth:`window` with built-in aggregates, vectorised over Arrow batches.

        ``aggregate`` names the result fields, each ``count()`` (records), or
        ``sum_of``, ``min_of``, ``max_of``, ``mean_of`` a numeric column (nulls skipped;
        a window of nulls sums to 0, and its min, max and mean are null); all are
        computed in one pass. Sums, minimums and maximums of an integer column are
        exact int64. Results are those of :meth:`window` with named aggregates (the key
        in a field named after the key column). The earlier form, one aggregate as
        ``how`` (``"count"``, ``"sum"``, ``"min"``, ``"max"``, ``"mean"``) of ``column``
        into ``output`` (default ``"value"``) next to ``"key"``, is still accepted.
        The stream must be keyed by a column and the event time must be a column;
        windows are tumbling, sliding or sessions (:class:`~barrier_runtime.api.windows.Session`:
        a key's records closer than the gap merge into one window, ``[first, last + gap)``,
        fired when the watermark reaches its end - 1). A record added within the allowed
        lateness to a window that has fired emits it again at once as an update, once per
        batch (``window`` does so once per record); the last update is the same.

        >>> from barrier_runtime.api.watermarks import monotonous
        >>> from barrier_runtime.api.windows import Tumbling, count, sum_of
        >>> from barrier_runtime.testing import TestingSink, TestingSource
        >>> from barrier_runtime.api import Dataflow
        >>> flow = Dataflow("volumes")
        >>> trades = flow.source("trades", TestingSource([{"sym": "X", "qty": 5, "ts": 1}]),
        ...                      timestamps="ts", watermarks=monotonous())
        >>> trades.key_by("by-sym", "sym").window_agg(
        ...     "volume", Tumbling(60_000),
        ...     aggregate={"trades": count(), "volume": sum_of("qty")}).sink("out", TestingSink())
        >>> from barrier_runtime.api.windows import Session
        >>> trades.key_by("by-sym-2", "sym").window_agg(
        ...     "bursts", Session(10_000), aggregate={"trades": count()}).sink("s", TestingSink())
        """
        if self.key_column is None:
            raise building.InvalidDataflowError(
                f"step {step_id!r}: window_agg needs a stream keyed by a column "
                "(key_by(step, 'col')); for a key function use window"
            )
        key_field = "key"
        if aggregate is not None:
            if how is not None or column is not None:
                raise building.InvalidDataflowError(
                    f"step {step_id!r}: give aggregate= or how= (with column=), not both"
                )
            self._no_output(step_id, output)
            key_field = self.key_column
            fields = window_fields.vectorised(step_id, aggregate, key_field)
        else:
            fields = (self._one_aggregate(step_id, how, column, output or "value"),)
        if not isinstance(
            assigner, windows_mod.Tumbling | windows_mod.Sliding | windows_mod.Session
        ):
            raise building.InvalidDataflowError(
                f"step {step_id!r}: window_agg takes Tumbling, Sliding or Session windows, "
                f"not {type(assigner).__name__}; for your own assigner use window"
            )
        times = self._timestamps(step_id, timestamps)
        if not isinstance(times, str):
            whose = "the sources declare a function" if timestamps is None else "given a function"
            raise building.InvalidDataflowError(
                f"step {step_id!r}: window_agg reads event time from a column ({whose}): "
                "give timestamps=<column>, or use window"
            )
        return self._windowed(
            step_id,
            allowed_lateness_ms,
            lambda sid, inp: defs.WindowAggStep(
                sid, inp, assigner, times, fields, allowed_lateness_ms, key_field
            ),
        )

    @staticmethod
    def _one_aggregate(
        step_id: str, how: defs.WindowHow | None, column: str | None, output: str
    ) -> defs.WindowAggregate:
        if how not in defs.WINDOW_HOWS:
            raise building.InvalidDataflowError(
                f"step {step_id!r}: give aggregate={{name: count(), ...}}, or how= one of "
                f"{', '.join(defs.WINDOW_HOWS)}, not {how!r}"
            )
        if (column is None) != (how == "count"):
            raise building.InvalidDataflowError(
                f"step {step_id!r}: how={how!r} "
                + ("takes no column" if how == "count" else "needs column=")
            )
        return defs.WindowAggregate(output, how, column)

    @staticmethod
    def _no_output(step_id: str, output: str | None) -> None:
        if output is not None:
            raise building.InvalidDataflowError(
                f"step {step_id!r}: named aggregates name their own fields; "
                "output= goes with a single aggregate"
            )

    def _timestamps(
        self, step_id: str, given: event_time.Timestamps | None
    ) -> event_time.Timestamps:
        return window_fields.carried_timestamps(self.flow, self.step_id, step_id, given)

    def _windowed(
        self,
        step_id: str,
        allowed_lateness_ms: int,
        make: Callable[[types.StepId, defs.Input], defs.WindowStep | defs.WindowAggStep],
    ) -> W:
        """Check the event-time set-up, then add the window step ``make`` builds."""
        self._require_watermarks(step_id, allowed_lateness_ms)
        step = make(self.flow._new_id(step_id), self._keyed_input(step_id))
        return self._windowed_stream(self.flow._add(step))

    def _require_watermarks(self, step_id: str, allowed_lateness_ms: int) -> None:
        if (
            isinstance(allowed_lateness_ms, bool)
            or not isinstance(allowed_lateness_ms, int)
            or allowed_lateness_ms < 0
        ):
            raise building.InvalidDataflowError(
                f"step {step_id!r}: allowed_lateness_ms must be a non-negative int, "
                f"got {allowed_lateness_ms!r}"
            )
        if not any(
            isinstance(s, defs.SourceStep) and s.watermarks is not None for s in self.flow.steps
        ):
            raise building.InvalidDataflowError(
                f"step {step_id!r}: windows fire on watermarks, and no source of dataflow "
                f"{self.flow.name!r} has any; give the source timestamps= and watermarks="
            )

    def interval_join(
        self,
        step_id: str,
        other: EventTimeSteps[S, W],
        *,
        lower_ms: int,
        upper_ms: int,
        timestamps: event_time.Timestamps | None = None,
        other_timestamps: event_time.Timestamps | None = None,
        fn: Callable[[batch_mod.Record, batch_mod.Record], batch_mod.Record] | None = None,
    ) -> S:
        """Pairs of this stream's record at ``l`` and ``other``'s record of the same key at
        ``r`` with ``l + lower_ms <= r <= l + upper_ms``, each emitted once as
        ``fn(left, right)`` (default ``{"key": key, "left": left, "right": right}``).

        Records are buffered per key until the watermark makes a match impossible, then
        dropped from state (built on event-time timers); a record that arrives at or
        behind the watermark is late and ignored.

        >>> from barrier_runtime.api.watermarks import BoundedOutOfOrderness
        >>> from barrier_runtime.testing import TestingSink, TestingSource
        >>> from barrier_runtime.api import Dataflow
        >>> flow = Dataflow("orders-payments")
        >>> wm = BoundedOutOfOrderness(1_000)
        >>> orders = flow.source("orders", TestingSource([{"id": 1, "ts": 0}]),
        ...                      timestamps="ts", watermarks=wm).key_by("by-order", "id")
        >>> paid = flow.source("payments", TestingSource([{"id": 1, "ts": 900}]),
        ...                    timestamps="ts", watermarks=wm).key_by("by-payment", "id")
        >>> orders.interval_join("paid-within-1h", paid, lower_ms=0, upper_ms=3_600_000) \\
        ...     .sink("out", TestingSink())
        >>> flow.validate()
        """
        if not isinstance(other, EventTimeSteps):  # KeyedStream is the only one
            raise building.InvalidDataflowError(
                f"step {step_id!r}: interval_join needs a KeyedStream"
            )
        for name, bound in (("lower_ms", lower_ms), ("upper_ms", upper_ms)):
            if isinstance(bound, bool) or not isinstance(bound, int):
                raise building.InvalidDataflowError(
                    f"step {step_id!r}: {name} must be an int, not {bound!r}"
                )
        if lower_ms > upper_ms:
            raise building.InvalidDataflowError(
                f"step {step_id!r}: lower_ms ({lower_ms}) is above upper_ms ({upper_ms}): "
                "no pair could ever match"
            )
        if other_timestamps is None:
            other_timestamps = (
                timestamps
                if timestamps is not None
                else window_fields.carried_timestamps(self.flow, other.step_id, step_id, None)
            )
        timestamps = self._timestamps(step_id, timestamps)
        inputs = (self._keyed_input(step_id), other._keyed_input(step_id))
        step = defs.IntervalJoinStep(
            self.flow._new_id(step_id),
            inputs,
            (timestamps, other_timestamps),
            lower_ms,
            upper_ms,
            fn,
        )
        return self._stream(self.flow._add(step))
