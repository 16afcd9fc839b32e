"""Event-time windows: which windows a record belongs to, and how a window's records are folded.

Windows are half-open ``[start, end)`` intervals of event time (ms); a window
is complete when the watermark reaches its :attr:`Window.max_timestamp`
(``end - 1``).

>>> Tumbling(60_000).assign(125_000)
(Window(start=120000, end=180000),)
>>> Sliding(60_000, 30_000).assign(125_000)
(Window(start=90000, end=150000), Window(start=120000, end=180000))
>>> Session(10_000).assign(125_000)
(Window(start=125000, end=135000),)

Session windows *merge*: a key's sessions that overlap after a new record
become one.

>>> merged, absorbed = merge_session([Window(0, 10), Window(30, 40)], Window(8, 31))
>>> merged, absorbed
(Window(start=0, end=40), [Window(start=0, end=10), Window(start=30, end=40)])

An :class:`AggregateFunction` folds a window's records one at a time;
:func:`count`, :func:`sum_of`, :func:`min_of`, :func:`max_of` and
:func:`mean_of` are the built-in ones:

>>> agg = mean_of("v")
>>> acc = agg.create()
>>> for r in [{"v": 1}, {"v": 4}]:
...     acc = agg.add(acc, r)
>>> agg.result(acc)
2.5

Several named aggregates fold side by side into one record
(:class:`Aggregates`, what ``window(..., aggregate={...})`` builds):

>>> both = Aggregates({"clicks": count(), "spend": sum_of("v")})
>>> acc = both.create()
>>> for r in [{"v": 1}, {"v": 4}]:
...     acc = both.add(acc, r)
>>> both.result(acc)
{'clicks': 2, 'spend': 5}
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from barrier_runtime.api import batch as batch_mod

Acc = TypeVar("Acc")
WindowHow = Literal["count", "sum", "min", "max", "mean"]
"""The built-in aggregates by name."""


@dataclasses.dataclass(frozen=True, slots=True, order=True)
class Window:
    """``[start, end)`` in ms of event time."""

    start: int
    end: int

    @property
    def max_timestamp(self) -> int:
        """The last event time inside the window: it is complete once the watermark is here."""
        return self.end - 1


class WindowAssigner(abc.ABC):
    """Gives each event time the windows it belongs to."""

    merging: bool = False
    """Whether windows of one key merge (sessions)."""

    @abc.abstractmethod
    def assign(self, timestamp: int) -> tuple[Window, ...]:
        """The windows of a record at ``timestamp``, in ascending start order."""

    def assign_starts(
        self, timestamps: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int64]]:
        """Vectorised :meth:`assign` for fixed-size windows: ``(record index, window start)``
        pairs, record by record, each record's windows in ascending start order."""
        raise TypeError(f"{type(self).__name__} windows are not assigned in batches")

    @abc.abstractmethod
    def describe(self) -> dict[str, Any]:
        """A JSON description for ``/v1/job`` and the run summary."""


def _check_ms(name: str, value: int, *, positive: bool = True) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or (positive and value <= 0):
        raise ValueError(f"{name} must be a positive int of milliseconds, got {value!r}")


@dataclasses.dataclass(frozen=True, slots=True)
class Tumbling(WindowAssigner):
    """Back-to-back windows of ``size_ms``, aligned to ``offset_ms`` past the epoch."""

    size_ms: int
    offset_ms: int = 0

    def __post_init__(self) -> None:
        _check_ms("size_ms", self.size_ms)
        _check_ms("offset_ms", self.offset_ms, positive=False)

    def assign(self, timestamp: int) -> tuple[Window, ...]:
        start = timestamp - (timestamp - self.offset_ms) % self.size_ms
        return (Window(start, start + self.size_ms),)

    def assign_starts(
        self, timestamps: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int64]]:
        starts = timestamps - np.mod(timestamps - self.offset_ms, self.size_ms)
        return np.arange(len(timestamps)), starts.astype(np.int64)

    def describe(self) -> dict[str, Any]:
        return {"kind": "tumbling", "sizeMs": self.size_ms, "offsetMs": self.offset_ms}


@dataclasses.dataclass(frozen=True, slots=True)
class Sliding(WindowAssigner):
    """Windows of ``size_ms`` starting every ``slide_ms``; a record is in ``size/slide`` of them."""

    size_ms: int
    slide_ms: int
    offset_ms: int = 0

    def __post_init__(self) -> None:
        _check_ms("size_ms", self.size_ms)
        _check_ms("slide_ms", self.slide_ms)
        _check_ms("offset_ms", self.offset_ms, positive=False)
        if self.slide_ms > self.size_ms:
            raise ValueError(
                f"slide_ms ({self.slide_ms}) above size_ms ({self.size_ms}) would leave gaps "
                "that drop records; use a slide at most the size"
            )

    @property
    def _count(self) -> int:
        return -(-self.size_ms // self.slide_ms)

    def assign(self, timestamp: int) -> tuple[Window, ...]:
        last = timestamp - (timestamp - self.offset_ms) % self.slide_ms
        starts = range(last - (self._count - 1) * self.slide_ms, last + 1, self.slide_ms)
        return tuple(Window(s, s + self.size_ms) for s in starts if s + self.size_ms > timestamp)

    def assign_starts(
        self, timestamps: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int64]]:
        last = timestamps - np.mod(timestamps - self.offset_ms, self.slide_ms)
        back = np.arange(self._count - 1, -1, -1, dtype=np.int64) * self.slide_ms
        starts = last[:, None] - back[None, :]
        keep = starts + self.size_ms > timestamps[:, None]
        rows = np.broadcast_to(np.arange(len(timestamps))[:, None], starts.shape)
        return rows[keep], starts[keep].astype(np.int64)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "sliding",
            "sizeMs": self.size_ms,
            "slideMs": self.slide_ms,
            "offsetMs": self.offset_ms,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class Session(WindowAssigner):
    """A key's records closer than ``gap_ms`` to each other form one session."""

    gap_ms: int
    merging = True

    def __post_init__(self) -> None:
        _check_ms("gap_ms", self.gap_ms)

    def assign(self, timestamp: int) -> tuple[Window, ...]:
        return (Window(timestamp, timestamp + self.gap_ms),)

    def describe(self) -> dict[str, Any]:
        return {"kind": "session", "gapMs": self.gap_ms}


def merge_session(existing: Sequence[Window], new: Window) -> tuple[Window, list[Window]]:
    """``new`` merged with every window of ``existing`` it overlaps or touches.

    Returns the merged window and the existing windows it absorbed (in start
    order); those are gone, their accumulators merge into the result.
    """
    absorbed = sorted(w for w in existing if w.start <= new.end and new.start <= w.end)
    start = min([new.start, *(w.start for w in absorbed)])
    end = max([new.end, *(w.end for w in absorbed)])
    return Window(start, end), absorbed


class AggregateFunction(abc.ABC, Generic[Acc]):
    """Folds a window's records into an accumulator; ``merge`` joins two (sessions need it).

    Accumulators are kept in keyed state, so they must be values state can
    hold (numbers, strings, tuples, lists, dicts of those; see
    ``docs/state-values.md``).
    """

    @abc.abstractmethod
    def create(self) -> Acc: ...

    @abc.abstractmethod
    def add(self, acc: Acc, record: batch_mod.Record) -> Acc: ...

    @abc.abstractmethod
    def merge(self, a: Acc, b: Acc) -> Acc: ...

    @abc.abstractmethod
    def result(self, acc: Acc) -> Any:
        """The window's value (put in the output record under the step's ``output`` name)."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Fold(AggregateFunction[Any]):
    name: WindowHow
    initial: Any
    step: Callable[[Any, Any], Any]
    combine: Callable[[Any, Any], Any]
    finish: Callable[[Any], Any]
    column: str | None

    def create(self) -> Any:
        return self.initial

    def add(self, acc: Any, record: batch_mod.Record) -> Any:
        return self.step(acc, None if self.column is None else record[self.column])

    def merge(self, a: Any, b: Any) -> Any:
        return self.combine(a, b)

    def result(self, acc: Any) -> Any:
        return self.finish(acc)


def _keep(pick: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda a, b: b if a is None else a if b is None else pick(a, b)


def count() -> AggregateFunction[Any]:
    """The number of records in the window."""
    return _Fold("count", 0, lambda a, _: a + 1, lambda a, b: a + b, lambda a: a, None)


def sum_of(column: str) -> AggregateFunction[Any]:
    """The sum of ``column`` (``None`` values skipped)."""
    add = _keep(lambda a, b: a + b)
    return _Fold("sum", 0, add, add, lambda a: a, column)


def min_of(column: str) -> AggregateFunction[Any]:
    """The smallest ``column`` value (``None`` if the window held none)."""
    return _Fold("min", None, _keep(min), _keep(min), lambda a: a, column)


def max_of(column: str) -> AggregateFunction[Any]:
    """The largest ``column`` value (``None`` if the window held none)."""
    return _Fold("max", None, _keep(max), _keep(max), lambda a: a, column)


def mean_of(column: str) -> AggregateFunction[Any]:
    """The mean of ``column`` over the records where it is not ``None``."""

    def add(acc: Any, value: Any) -> Any:
        return acc if value is None else (acc[0] + value, acc[1] + 1)

    return _Fold(
        "mean",
        (0, 0),
        add,
        lambda a, b: (a[0] + b[0], a[1] + b[1]),
        lambda a: a[0] / a[1] if a[1] else None,
        column,
    )


def builtin_kind(agg: AggregateFunction[Any]) -> tuple[WindowHow, str | None] | None:
    """``(kind, column)`` of a built-in aggregate (``count``, ``sum``, ``min``, ``max``,
    ``mean``), which ``window_agg`` computes vectorised; ``None`` for any other.

    >>> builtin_kind(sum_of("v")), builtin_kind(count())
    (('sum', 'v'), ('count', None))
    """
    return (agg.name, agg.column) if isinstance(agg, _Fold) else None


class Aggregates(AggregateFunction[list[Any]]):
    """Named aggregates folded together: the result is ``{name: result}``.

    The accumulator is the list of the aggregates' accumulators, in the order of
    the names; a window step puts each result in its own field.
    """

    def __init__(self, named: Mapping[str, AggregateFunction[Any]]) -> None:
        self.named = dict(named)

    def create(self) -> list[Any]:
        return [agg.create() for agg in self.named.values()]

    def add(self, acc: list[Any], record: batch_mod.Record) -> list[Any]:
        return [agg.add(a, record) for agg, a in zip(self.named.values(), acc, strict=True)]

    def merge(self, a: list[Any], b: list[Any]) -> list[Any]:
        return [agg.merge(x, y) for agg, x, y in zip(self.named.values(), a, b, strict=True)]

    def result(self, acc: list[Any]) -> dict[str, Any]:
        return {name: agg.result(a) for (name, agg), a in zip(self.named.items(), acc, strict=True)}
