"""Logical step definitions: what each step of a dataflow does, before execution planning."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import event_time, sinks, sources
from barrier_runtime.api import watermarks as watermarks_mod
from barrier_runtime.api import windows as windows_mod
from barrier_runtime.core import types

Key = str | int | bytes
KeyFn = Callable[[batch_mod.Record], Key]
StatefulFn = Callable[[Any, batch_mod.Record], tuple[Any, Iterable[batch_mod.Record]]]
ConnectFn = Callable[[Any, int, batch_mod.Record], tuple[Any, Iterable[batch_mod.Record]]]
WindowFn = Callable[[Any, windows_mod.Window, list[batch_mod.Record]], Iterable[batch_mod.Record]]
"""``fn(key, window, records) -> records``: a whole window at once."""
OnError = Literal["fail", "skip", "dead-letter"]
"""What a step or source does with a record it cannot process:

* ``"fail"`` (the default): the attempt fails; the job gives up after
  ``attemptsPerRecord`` attempts on the same record;
* ``"skip"``: drop it, count it (metrics, the live view, the summary) and log it;
* ``"dead-letter"``: send the record, its position and the error to the
  dataflow's dead-letter sink, exactly once with the checkpoint.
"""
ON_ERROR_POLICIES: tuple[OnError, ...] = ("fail", "skip", "dead-letter")


class Partitioning(enum.Enum):
    """How records reach the next step."""

    FORWARD = "forward"
    """Subtask i to subtask i, chained in-process when possible."""
    KEYED = "keyed"
    """By key group of the record's key."""


@dataclass(frozen=True, slots=True)
class Input:
    """One input of a step: the upstream step and how records are routed from it."""

    step_id: types.StepId
    partitioning: Partitioning
    key_fn: KeyFn | None = None
    key_column: str | None = None
    """The column the key is read from, when keyed by a column: routing is then vectorised."""


@dataclass(frozen=True, slots=True)
class SourceStep:
    step_id: types.StepId
    source: sources.Source
    timestamps: event_time.Timestamps | None = None
    """Where each record's event time comes from (with ``watermarks``), or ``None``."""
    watermarks: watermarks_mod.WatermarkStrategy | None = None
    """How the source's partitions generate watermarks, or ``None`` (no event time)."""


@dataclass(frozen=True, slots=True)
class FlatMapStep:
    """Per-record function returning zero or more records (``map`` is a special case)."""

    step_id: types.StepId
    input: Input
    fn: Callable[[batch_mod.Record], Iterable[batch_mod.Record]]
    on_error: OnError = "fail"


@dataclass(frozen=True, slots=True)
class FilterStep:
    """Per-record predicate: keeps the records it is true for, unchanged.

    The predicate must not modify the record: a batch read as Arrow keeps its
    Arrow form, filtered, so the kept records travel on without a conversion.
    """

    step_id: types.StepId
    input: Input
    predicate: Callable[[batch_mod.Record], bool]
    on_error: OnError = "fail"


@dataclass(frozen=True, slots=True)
class MapBatchesStep:
    step_id: types.StepId
    input: Input
    fn: Callable[[pa.RecordBatch], pa.RecordBatch]
    on_error: OnError = "fail"
    """A batch the function raises on is rejected whole, record by record."""


@dataclass(frozen=True, slots=True)
class KeyByStep:
    """Marks the stream as keyed: the next step receives records partitioned by ``key_fn``."""

    step_id: types.StepId
    input: Input
    key_fn: KeyFn
    key_column: str | None = None


@dataclass(frozen=True, slots=True)
class StatefulStep:
    """A keyed step with one value of state per key; ``fn(state, record) -> (state, outputs)``.

    Returning ``None`` as the new state deletes the key's state.
    """

    step_id: types.StepId
    input: Input
    fn: StatefulFn
    on_error: OnError = "fail"
    """A rejected record leaves its key's state unchanged."""


@dataclass(frozen=True, slots=True)
class KeyedSumStep:
    """A vectorised keyed running sum of an integer column.

    Each record is emitted with ``output`` = the sum of ``column`` over its
    key's records so far, itself included (nulls count as 0).
    """

    step_id: types.StepId
    input: Input
    column: str
    output: str


@dataclass(frozen=True, slots=True)
class ProcessStep:
    """A keyed function with per-key state and timers (Flink's ``KeyedProcessFunction``).

    ``on_record(state, record, ctx) -> (state, records)`` per record and
    ``on_timer(state, timer, ctx) -> (state, records)`` per due timer, where
    ``ctx`` (:class:`~barrier_runtime.api.process.ProcessContext`) registers and
    deletes the current key's timers. ``None`` as the new state deletes it.
    """

    step_id: types.StepId
    input: Input
    on_record: Callable[[Any, batch_mod.Record, Any], tuple[Any, Iterable[batch_mod.Record]]]
    on_timer: Callable[[Any, Any, Any], tuple[Any, Iterable[batch_mod.Record]]] | None
    timestamps: event_time.Timestamps | None = None
    """Gives ``ctx.timestamp`` (the record's event time), if set."""


@dataclass(frozen=True, slots=True)
class WindowStep:
    """Event-time windows per key: records fold into their windows, which fire on the watermark.

    Exactly one of ``aggregate`` (incremental) and ``process`` (the whole
    window's records at once) is set. A window fires when the watermark reaches
    its end; records up to ``allowed_lateness_ms`` later update it (each firing
    is emitted, with ``update`` counting the earlier ones); later records go to
    the step's side output of late records, if it has one.
    """

    step_id: types.StepId
    input: Input
    assigner: windows_mod.WindowAssigner
    timestamps: event_time.Timestamps
    aggregate: windows_mod.AggregateFunction[Any] | None
    process: WindowFn | None
    output: str | None
    """The result's field; ``None``: the aggregate (:class:`~windows_mod.Aggregates`)
    gives a dict of fields."""
    allowed_lateness_ms: int = 0
    key_field: str = "key"
    """The field each result carries its key in."""


@dataclass(frozen=True, slots=True)
class IntervalJoinStep:
    """Joins two keyed streams in event time: a left record at ``l`` with every right record
    of its key at ``r`` where ``l + lower_ms <= r <= l + upper_ms``.

    Each pair is emitted once, as ``fn(left, right)`` (``None``: ``{"key", "left",
    "right"}``). A record at or behind the watermark when it arrives is late and dropped
    (counted).
    """

    step_id: types.StepId
    inputs: tuple[Input, Input]
    timestamps: tuple[event_time.Timestamps, event_time.Timestamps]
    lower_ms: int
    upper_ms: int
    fn: Callable[[batch_mod.Record, batch_mod.Record], batch_mod.Record] | None


WindowHow = windows_mod.WindowHow
WINDOW_HOWS: tuple[WindowHow, ...] = ("count", "sum", "min", "max", "mean")


@dataclass(frozen=True, slots=True)
class WindowAggregate:
    """One result field of a vectorised window: ``how`` of ``column`` (``None`` for count)."""

    name: str
    how: WindowHow
    column: str | None


@dataclass(frozen=True, slots=True)
class WindowAggStep:
    """Vectorised windows over Arrow batches: each of ``aggregates`` per key and window.

    The stream is keyed by a column; window assignment and per-batch partial
    aggregates are computed on whole batches. Results, lateness and the late
    side output are those of :class:`WindowStep`.
    """

    step_id: types.StepId
    input: Input
    assigner: windows_mod.WindowAssigner
    timestamps: str
    aggregates: tuple[WindowAggregate, ...]
    allowed_lateness_ms: int = 0
    key_field: str = "key"
    """The field each result carries its key in."""

    @property
    def columns(self) -> tuple[str, ...]:
        """The value columns the aggregates read, sorted, each once."""
        return tuple(sorted({a.column for a in self.aggregates if a.column is not None}))

    @property
    def legacy_column(self) -> str | None:
        """The value column of a one-aggregate step: snapshots written before
        several aggregates (one unnamed column) restore into it."""
        return self.aggregates[0].column if len(self.aggregates) == 1 else None


@dataclass(frozen=True, slots=True)
class SideOutputStep:
    """The late records of a :class:`WindowStep` (its ``input``), as a stream of their own."""

    step_id: types.StepId
    input: Input


@dataclass(frozen=True, slots=True)
class ConnectStep:
    """A two-input keyed step; ``fn(state, side, record) -> (state, outputs)``, side 0 or 1."""

    step_id: types.StepId
    inputs: tuple[Input, Input]
    fn: ConnectFn
    on_error: OnError = "fail"


@dataclass(frozen=True, slots=True)
class MergeStep:
    """The union of several streams."""

    step_id: types.StepId
    inputs: tuple[Input, ...]


@dataclass(frozen=True, slots=True)
class SinkStep:
    step_id: types.StepId
    input: Input
    sink: sinks.Sink


Step = (
    SourceStep
    | FlatMapStep
    | FilterStep
    | MapBatchesStep
    | KeyByStep
    | StatefulStep
    | KeyedSumStep
    | ProcessStep
    | IntervalJoinStep
    | WindowStep
    | WindowAggStep
    | SideOutputStep
    | ConnectStep
    | MergeStep
    | SinkStep
)


def step_inputs(step: Step) -> tuple[Input, ...]:
    """The inputs of any step, in side order."""
    if isinstance(step, SourceStep):
        return ()
    if isinstance(step, ConnectStep | MergeStep | IntervalJoinStep):
        return step.inputs
    return (step.input,)


def is_keyed(step: Step) -> bool:
    """Whether the step owns keyed state."""
    return isinstance(
        step,
        StatefulStep
        | KeyedSumStep
        | ConnectStep
        | WindowStep
        | WindowAggStep
        | ProcessStep
        | IntervalJoinStep,
    )
