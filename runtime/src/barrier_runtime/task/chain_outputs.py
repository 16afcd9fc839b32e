"""The outputs an operator chain wires its operators to, once, when it is built.

As in Flink's ``OperatorChain`` (``ChainingOutput``, ``RecordWriterOutput``),
every step of a chain emits into one :class:`StepOutput`, which counts what
the step emitted and fans it out to

* a :class:`ChainedOutput` per chained consumer: a direct call into the next
  operator (records, and watermarks after the operator's timers fired), or
* a :class:`NetworkOutput` per edge that leaves the task: the subtask's
  output channels, which route by key or forward.

Records therefore go from operator to operator by direct calls; the subtask
is not re-entered per hop. Watermarks and idle statuses take the same wires
(a side-output consumer gets the markers of its step, its records come from
the operator itself).

Threading: used by its subtask's thread only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.channels import messages
from barrier_runtime.core import types
from barrier_runtime.task.operators import base

if TYPE_CHECKING:
    from barrier_runtime.graph import plan as plan_mod


class Output(Protocol):
    """Where one step's records and event-time markers go."""

    def emit(self, batch: batch_mod.Batch) -> None: ...

    def watermark(self, watermark: int) -> None: ...

    def status(self, idle: bool) -> None: ...


class NetworkSender(Protocol):
    """The subtask's output channels (:class:`~barrier_runtime.task.output.SubtaskOutput`)."""

    def send(
        self, step_id: types.StepId, consumer: plan_mod.Consumer, batch: batch_mod.Batch
    ) -> None: ...

    def send_marker(
        self,
        step_id: types.StepId,
        consumer: plan_mod.Consumer,
        marker: messages.WatermarkMarker | messages.IdleMarker,
    ) -> None: ...


@dataclass
class ChainCounters:
    """Per step of one subtask: records in and out, and the last watermark forwarded."""

    records_in: dict[types.StepId, int] = field(default_factory=dict)
    records_out: dict[types.StepId, int] = field(default_factory=dict)
    watermarks: dict[types.StepId, int] = field(default_factory=dict)


class StepOutput:
    """Everything ``step_id`` emits: counted, then handed to each of its outputs."""

    __slots__ = ("_counters", "markers", "records", "step_id")

    def __init__(self, step_id: types.StepId, counters: ChainCounters) -> None:
        self.step_id = step_id
        self.records: list[Output] = []
        """The outputs of the step's records (not its side-output consumers)."""
        self.markers: list[Output] = []
        """The outputs of the step's watermarks and idle statuses (every consumer)."""
        self._counters = counters

    def emit(self, batch: batch_mod.Batch) -> None:
        out = self._counters.records_out
        out[self.step_id] = out.get(self.step_id, 0) + len(batch)
        for target in self.records:
            target.emit(batch)

    def watermark(self, watermark: int) -> None:
        self._counters.watermarks[self.step_id] = watermark
        for target in self.markers:
            target.watermark(watermark)

    def status(self, idle: bool) -> None:
        for target in self.markers:
            target.status(idle)


class ChainedOutput:
    """Input ``side`` of the chained operator of ``step_id``: a direct call (Flink's
    ``ChainingOutput``); the operator's own output follows it for markers."""

    __slots__ = ("_counters", "_next", "_operator", "_side", "step_id")

    def __init__(
        self,
        step_id: types.StepId,
        operator: base.Operator,
        side: int,
        operator_output: StepOutput,
        counters: ChainCounters,
    ) -> None:
        self.step_id = step_id
        self._operator = operator
        self._side = side
        self._next = operator_output
        self._counters = counters

    def emit(self, batch: batch_mod.Batch) -> None:
        seen = self._counters.records_in
        seen[self.step_id] = seen.get(self.step_id, 0) + len(batch)
        self._operator.process(batch, self._side)

    def watermark(self, watermark: int) -> None:
        """The operator fires its due timers (their output goes first), then forwards."""
        self._operator.on_watermark(watermark)
        self._next.watermark(watermark)

    def status(self, idle: bool) -> None:
        self._next.status(idle)


class NetworkOutput:
    """The edge from ``step_id`` to ``consumer`` that leaves the task (Flink's
    ``RecordWriterOutput``): the subtask's output channels."""

    __slots__ = ("_consumer", "_network", "step_id")

    def __init__(
        self, step_id: types.StepId, consumer: plan_mod.Consumer, network: NetworkSender
    ) -> None:
        self.step_id = step_id
        self._consumer = consumer
        self._network = network

    def emit(self, batch: batch_mod.Batch) -> None:
        self._network.send(self.step_id, self._consumer, batch)

    def watermark(self, watermark: int) -> None:
        self._network.send_marker(self.step_id, self._consumer, messages.WatermarkMarker(watermark))

    def status(self, idle: bool) -> None:
        self._network.send_marker(self.step_id, self._consumer, messages.IdleMarker(idle))
