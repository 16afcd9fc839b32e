"""The output side of one subtask: its output channels, routing and barrier forwarding.

:class:`SubtaskOutput` holds the sending ends of a subtask's output channels
per route and sends what the operator chain emits on edges that leave the
task: forward edges to the same subtask index, keyed edges split by owner.
It implements the checkpointing part's
:class:`~barrier_runtime.task.subtask_checkpointing.BarrierOutput` port:
broadcasting markers, and forwarding an unaligned barrier with priority,
reporting the output it overtook as channel state.

Threading: used by its subtask's thread only (channels are thread-safe).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import steps
from barrier_runtime.channels import messages
from barrier_runtime.core import types
from barrier_runtime.task import channel as channel_mod
from barrier_runtime.task import routing, snapshots

if TYPE_CHECKING:
    from barrier_runtime.graph import plan as plan_mod

Route = tuple[types.StepId, types.StepId, int]
"""(upstream step, downstream head step, input side) of an edge leaving a task."""
Outputs = dict[Route, dict[int, channel_mod.OutputChannel]]
"""Per route, the output channel to each receiving subtask index."""


class SubtaskOutput:
    """The output channels of subtask ``index`` of a task of ``plan``."""

    def __init__(self, plan: plan_mod.ExecutionPlan, index: int, outputs: Outputs) -> None:
        self._plan = plan
        self._index = index
        self._outputs = outputs
        self._all = [ch for group in outputs.values() for ch in group.values()]

    def has_capacity(self) -> bool:
        """Every output channel is below capacity (back-pressure lifts)."""
        return all(ch.has_capacity() for ch in self._all)

    def send(
        self, step_id: types.StepId, consumer: plan_mod.Consumer, batch: batch_mod.Batch
    ) -> None:
        """Send ``batch``, emitted by ``step_id``, along the non-chained edge to ``consumer``."""
        targets = self._outputs[(step_id, consumer.step_id, consumer.side)]
        if consumer.partitioning is steps.Partitioning.FORWARD:
            targets[self._index].put(batch)
            return
        assert consumer.key_fn is not None
        parts = routing.split_by_owner(
            batch,
            consumer.key_fn,
            consumer.key_column,
            self._plan.parallelism,
            self._plan.flow.max_parallelism,
            step_id,
        )
        for owner, part in parts:
            targets[owner].put(part)

    def send_marker(
        self,
        step_id: types.StepId,
        consumer: plan_mod.Consumer,
        marker: messages.WatermarkMarker | messages.IdleMarker,
    ) -> None:
        """Send ``marker`` to every receiving subtask of the edge to ``consumer``."""
        for ch in self._outputs[(step_id, consumer.step_id, consumer.side)].values():
            ch.put(marker)

    def broadcast(self, item: channel_mod.Item) -> None:
        for ch in self._all:
            ch.put(item)

    def forward_priority(self, barrier: types.Barrier) -> list[snapshots.InFlight]:
        overtaken: list[snapshots.InFlight] = []
        for (_, target_step, side), group in self._outputs.items():
            target_task = self._plan.task_of[target_step]
            for target_subtask, chan in group.items():
                overtaken.extend(
                    snapshots.InFlight.of(
                        target_task, side, target_subtask, "output", self._index, item
                    )
                    for item in chan.put_priority(barrier)
                )
        return overtaken
