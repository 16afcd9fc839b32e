"""From a logical dataflow to an execution plan of chained tasks.

A *task* is a chain of steps executed together by one thread per subtask.
A step joins its upstream's chain when it has exactly one input and that
input is forwarded (not re-partitioned); otherwise it heads a new task whose
*input gate* receives one channel per upstream subtask that can send to it
(one for a forward edge, ``parallelism`` for a keyed edge). Barrier alignment
happens at input gates only. Every task runs at the job's parallelism, and
subtask *i* of every task lives in slice (worker) *i*.
"""

from __future__ import annotations

from dataclasses import dataclass

from barrier_runtime.api import dataflow, steps
from barrier_runtime.core import metadata, types


@dataclass(frozen=True, slots=True)
class InputEdge:
    """A channel group feeding a task's head step."""

    upstream_task: types.TaskId
    upstream_step: types.StepId
    side: int
    partitioning: steps.Partitioning
    key_fn: steps.KeyFn | None
    key_column: str | None = None


@dataclass(frozen=True, slots=True)
class ChannelSpec:
    """One input channel of subtask ``subtask``'s gate."""

    edge: InputEdge
    upstream_subtask: int


@dataclass(frozen=True, slots=True)
class TaskSpec:
    task_id: types.TaskId
    steps: tuple[types.StepId, ...]
    inputs: tuple[InputEdge, ...]

    @property
    def is_source(self) -> bool:
        return not self.inputs

    def channels(self, subtask: int, parallelism: int) -> tuple[ChannelSpec, ...]:
        """The gate's channels, in a fixed order that indexes them."""
        out: list[ChannelSpec] = []
        for edge in self.inputs:
            if edge.partitioning is steps.Partitioning.FORWARD:
                out.append(ChannelSpec(edge, subtask))
            else:
                out.extend(ChannelSpec(edge, s) for s in range(parallelism))
        return tuple(out)


@dataclass(frozen=True, slots=True)
class Consumer:
    """Where a step's output goes: a step in the same chain or the gate of another task."""

    step_id: types.StepId
    side: int
    chained: bool
    partitioning: steps.Partitioning
    key_fn: steps.KeyFn | None
    key_column: str | None = None
    """Set when the key is a column: Arrow batches are then routed in one vectorised pass."""
    side_output: bool = False
    """The late records of a window step: fed by the window operator directly, never
    by the step's main output (watermarks still reach it)."""


@dataclass(frozen=True, slots=True)
class ExecutionPlan:
    flow: dataflow.Dataflow
    parallelism: int
    tasks: tuple[TaskSpec, ...]
    task_of: dict[types.StepId, types.TaskId]
    consumers: dict[types.StepId, tuple[Consumer, ...]]

    def task(self, task_id: types.TaskId) -> TaskSpec:
        for t in self.tasks:
            if t.task_id == task_id:
                return t
        raise KeyError(task_id)

    def task_keys(self) -> list[metadata.TaskKey]:
        return [metadata.TaskKey(t.task_id, i) for t in self.tasks for i in range(self.parallelism)]

    def fingerprint(self) -> metadata.JobFingerprint:
        return metadata.JobFingerprint(
            step_ids=self.flow.step_ids,
            max_parallelism=self.flow.max_parallelism,
            parallelism=self.parallelism,
        )


def plan(flow: dataflow.Dataflow, parallelism: int) -> ExecutionPlan:
    """Validate ``flow`` and chain its steps into tasks for ``parallelism`` subtasks."""
    flow.validate()
    if not 1 <= parallelism <= flow.max_parallelism:
        raise dataflow.InvalidDataflowError(
            f"parallelism must be between 1 and max_parallelism ({flow.max_parallelism}), "
            f"got {parallelism}"
        )
    task_of: dict[types.StepId, types.TaskId] = {}
    members: dict[types.TaskId, list[types.StepId]] = {}
    gate_inputs: dict[types.TaskId, list[InputEdge]] = {}
    consumers: dict[types.StepId, list[Consumer]] = {s.step_id: [] for s in flow.steps}
    for step in flow.steps:  # insertion order is topological: inputs exist before use
        inputs = steps.step_inputs(step)
        chain = len(inputs) == 1 and inputs[0].partitioning is steps.Partitioning.FORWARD
        if chain:
            task_id = task_of[inputs[0].step_id]
            members[task_id].append(step.step_id)
        else:
            task_id = types.TaskId(step.step_id)
            members[task_id] = [step.step_id]
            gate_inputs[task_id] = [
                InputEdge(
                    task_of[i.step_id], i.step_id, side, i.partitioning, i.key_fn, i.key_column
                )
                for side, i in enumerate(inputs)
            ]
        task_of[step.step_id] = task_id
        for side, i in enumerate(inputs):
            consumers[i.step_id].append(
                Consumer(
                    step.step_id,
                    side,
                    chain,
                    i.partitioning,
                    i.key_fn,
                    i.key_column,
                    side_output=isinstance(step, steps.SideOutputStep),
                )
            )
    tasks = tuple(TaskSpec(tid, tuple(members[tid]), tuple(gate_inputs[tid])) for tid in members)
    return ExecutionPlan(
        flow=flow,
        parallelism=parallelism,
        tasks=tasks,
        task_of=task_of,
        consumers={k: tuple(v) for k, v in consumers.items()},
    )
