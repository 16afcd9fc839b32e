"""Event time and watermark strategies: how a source turns the times it reads into watermarks.

An *event time* is an ``int`` of milliseconds since the Unix epoch, read from
each record by a *timestamp assigner*: a column name (vectorised over Arrow
batches; integer or ``timestamp`` columns) or a function of the record.

A *watermark* ``W`` promises that no record with an event time ``<= W`` follows
on that path: such a record is *late*. Watermarks only rise. Each source
partition has its own :class:`WatermarkGenerator`, made by the source's
:class:`WatermarkStrategy`; a source subtask emits the minimum over its
partitions, and every step with several inputs the minimum over its inputs.

>>> strategy = BoundedOutOfOrderness(5_000).with_idleness(30.0)
>>> gen = strategy.create_generator()
>>> gen.current_watermark() == MIN_WATERMARK
True
>>> gen.on_events([10_000, 12_000, 11_000])
>>> gen.current_watermark()   # 12 000 - 5 000 - 1
6999
>>> strategy.describe()
{'kind': 'bounded-out-of-orderness', 'maxOutOfOrdernessMs': 5000, 'idleTimeoutSeconds': 30.0}

A generator's state travels in checkpoints as JSON, so a restored partition
never emits a watermark lower than the one it had emitted:

>>> again = strategy.create_generator()
>>> again.restore(gen.snapshot())
>>> again.current_watermark()
6999
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

MIN_WATERMARK = -(1 << 63)
"""Nothing is promised yet."""
MAX_WATERMARK = (1 << 63) - 1
"""The end of input: every event-time timer fires, every window closes."""

Json = Any
"""A JSON-serialisable value that is never mutated after it is returned."""


class InvalidWatermarkStateError(ValueError):
    """A checkpoint holds watermark generator state this generator cannot read."""


class WatermarkGenerator(abc.ABC):
    """Per source partition: sees every event time, tells the current watermark.

    Implement :meth:`on_event` and :meth:`current_watermark` for a custom
    strategy, and :meth:`snapshot` / :meth:`restore` if the generator keeps
    state that must survive a restore. The runtime calls :meth:`current_watermark`
    after each batch and periodically, and emits it only when it rose.
    """

    @abc.abstractmethod
    def on_event(self, timestamp: int) -> None:
        """One record with event time ``timestamp`` (ms) was read."""

    def on_events(self, timestamps: Iterable[int]) -> None:
        """A batch of event times, in read order (override for a vectorised version)."""
        for ts in timestamps:
            self.on_event(int(ts))

    @abc.abstractmethod
    def current_watermark(self) -> int:
        """The watermark this partition can promise now (``MIN_WATERMARK``: none yet)."""

    def snapshot(self) -> Json:
        """State to restore after a failure (JSON); ``None`` for a stateless generator."""
        return None

    def restore(self, state: Json) -> None:  # noqa: B027 - optional hook with a no-op default
        """Resume from what :meth:`snapshot` returned; ``state`` is never ``None`` here."""


class WatermarkStrategy(abc.ABC):
    """Makes one :class:`WatermarkGenerator` per source partition; may mark partitions idle.

    ``idle_timeout`` (seconds of processing time): a partition that has
    read nothing for that long is left out of its subtask's minimum until it
    reads again, so one silent partition does not hold back every window.
    """

    idle_timeout: float | None

    @abc.abstractmethod
    def create_generator(self) -> WatermarkGenerator:
        """A fresh generator for one partition."""

    @abc.abstractmethod
    def describe(self) -> dict[str, Any]:
        """A JSON description (shown by ``/v1/job`` and the run summary)."""

    def with_idleness(self, seconds: float) -> WatermarkStrategy:
        """The same strategy, with partitions idle after ``seconds`` without records."""
        if not seconds > 0:
            raise ValueError(f"the idleness timeout must be positive, got {seconds!r}")
        return dataclasses.replace(self, idle_timeout=float(seconds))  # type: ignore[type-var]


@dataclasses.dataclass(frozen=True, slots=True)
class BoundedOutOfOrderness(WatermarkStrategy):
    """Records arrive at most ``max_out_of_orderness_ms`` after a later record.

    The watermark is the largest event time seen minus the bound minus 1 ms:
    a record exactly ``max_out_of_orderness_ms`` behind the newest is still
    on time. ``BoundedOutOfOrderness(0)`` is :func:`monotonous`.
    """

    max_out_of_orderness_ms: int
    idle_timeout: float | None = None

    def __post_init__(self) -> None:
        bound = self.max_out_of_orderness_ms
        if isinstance(bound, bool) or not isinstance(bound, int) or bound < 0:
            raise ValueError(
                f"max_out_of_orderness_ms must be a non-negative int of milliseconds, got {bound!r}"
            )

    def create_generator(self) -> WatermarkGenerator:
        return _BoundedGenerator(self.max_out_of_orderness_ms)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "bounded-out-of-orderness",
            "maxOutOfOrdernessMs": self.max_out_of_orderness_ms,
            "idleTimeoutSeconds": self.idle_timeout,
        }


def monotonous(idle_timeout: float | None = None) -> BoundedOutOfOrderness:
    """Event times never decrease within a partition (watermark = newest - 1 ms)."""
    return BoundedOutOfOrderness(0, idle_timeout)


@dataclasses.dataclass(frozen=True, slots=True)
class CustomWatermarks(WatermarkStrategy):
    """Your own generator: ``factory()`` makes one per partition.

    >>> class Punctuated(WatermarkGenerator):
    ...     def __init__(self) -> None:
    ...         self.last = MIN_WATERMARK
    ...     def on_event(self, timestamp: int) -> None:
    ...         if timestamp % 1000 == 0:
    ...             self.last = max(self.last, timestamp - 1)
    ...     def current_watermark(self) -> int:
    ...         return self.last
    >>> gen = CustomWatermarks(Punctuated, "every-second-mark").create_generator()
    >>> gen.on_events([1500, 3000, 2500])
    >>> gen.current_watermark()
    2999
    """

    factory: Callable[[], WatermarkGenerator]
    name: str = "custom"
    idle_timeout: float | None = None

    def create_generator(self) -> WatermarkGenerator:
        made = self.factory()
        if not isinstance(made, WatermarkGenerator):
            raise TypeError(
                f"watermark strategy {self.name!r}: the factory returned "
                f"{type(made).__name__}, not a WatermarkGenerator"
            )
        return made

    def describe(self) -> dict[str, Any]:
        return {"kind": "custom", "name": self.name, "idleTimeoutSeconds": self.idle_timeout}


class _BoundedGenerator(WatermarkGenerator):
    __slots__ = ("_bound", "_max_seen")

    def __init__(self, bound: int) -> None:
        self._bound = bound
        self._max_seen: int | None = None

    def on_event(self, timestamp: int) -> None:
        if self._max_seen is None or timestamp > self._max_seen:
            self._max_seen = timestamp

    def on_events(self, timestamps: Iterable[int]) -> None:
        if isinstance(timestamps, np.ndarray):
            if timestamps.size:
                self.on_event(int(timestamps.max()))
            return
        newest = max(timestamps, default=None)
        if newest is not None:
            self.on_event(int(newest))

    def current_watermark(self) -> int:
        if self._max_seen is None:
            return MIN_WATERMARK
        return max(MIN_WATERMARK, self._max_seen - self._bound - 1)

    def snapshot(self) -> Json:
        return {"maxSeen": self._max_seen}

    def restore(self, state: Json) -> None:
        seen = state.get("maxSeen") if isinstance(state, dict) else state
        if not (seen is None or (isinstance(seen, int) and not isinstance(seen, bool))):
            raise InvalidWatermarkStateError(
                f"bounded-out-of-orderness watermark state {state!r} is not {{'maxSeen': int}}"
            )
        if seen is not None:
            self.on_event(seen)
