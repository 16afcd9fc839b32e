"""The operator chain of one subtask: its source reader and operators, built, wired and restored.

A task is a chain of steps; on each subtask :class:`OperatorChain` holds the
:class:`~barrier_runtime.task.source_reader.SourceReader` (if the chain starts
with a source) and one operator per other step, plus the dead-letter
operators of steps that reject to a dead-letter sink. Life cycle: built
(:meth:`OperatorChain.build`: each operator is created by the factory
registered for its step type and wired, once, to its step's
:class:`~barrier_runtime.task.chain_outputs.StepOutput`, which calls chained
operators directly and writes to the network at the chain's end), restored
from a checkpoint or started empty (:meth:`OperatorChain.restore`, which also
replays the channel state owed to this subtask), then fed batches on the
subtask thread (:meth:`process`, or :attr:`head_output` for a source's
batches), snapshotted between batches (:meth:`OperatorChain.snapshot_into`),
told about completed checkpoints, and finally closed.

The chain sees the attempt only through :class:`ChainServices`.

Threading: everything runs on the subtask's thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from barrier_runtime.alignment import watermark_valve
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import sources, steps
from barrier_runtime.channels import messages
from barrier_runtime.core import clock as clocks
from barrier_runtime.core import faults, metadata, types
from barrier_runtime.state import backends, key_groups
from barrier_runtime.task import chain_outputs, event_time, operators, snapshots, source_reader
from barrier_runtime.task import rejects as rejects_mod
from barrier_runtime.task.operators import registry

if TYPE_CHECKING:
    from barrier_runtime.graph import plan as plan_mod


class ChainServices(Protocol):
    """What the attempt offers a chain: the plan, time, faults and the restore point's state."""

    @property
    def plan(self) -> plan_mod.ExecutionPlan: ...

    @property
    def clock(self) -> clocks.Clock: ...

    @property
    def attempt(self) -> int: ...

    @property
    def faults(self) -> faults.FaultInjector: ...

    @property
    def restore_point(self) -> metadata.CheckpointMetadata | None: ...

    def worker_source(self, source: sources.Source, slice_index: int) -> sources.Source: ...

    def read_state(self, handle: metadata.StateHandle) -> bytes: ...

    def channel_state(self, meta: metadata.CheckpointMetadata) -> list[snapshots.InFlight]: ...

    def keyed_states(self, task: str, index: int) -> backends.KeyedStates:
        """Where subtask ``index`` of ``task`` keeps its keyed states (the job's backend)."""
        ...


class OperatorChain:
    """The reader and operators of subtask ``index`` of ``task``."""

    def __init__(
        self,
        services: ChainServices,
        task: plan_mod.TaskSpec,
        index: int,
        network: chain_outputs.NetworkSender,
        valve: watermark_valve.WatermarkValve | None = None,
    ) -> None:
        """``network``: the subtask's output channels, where edges that leave the task end;
        ``valve``: the input gate's watermark valve (tasks with inputs), whose state
        the chain snapshots and restores with the head step's."""
        self._ctx = services
        self._task = task
        self._index = index
        self._network = network
        self._valve = valve
        self._event_time = any(
            isinstance(s, steps.SourceStep) and s.watermarks is not None
            for s in services.plan.flow.steps
        )
        self._head = types.StepId(task.steps[0])
        self.counters = chain_outputs.ChainCounters()
        self.outputs: dict[types.StepId, chain_outputs.StepOutput] = {}
        """Per step of the task: the output its operator (or source) emits into."""
        self.ops: dict[types.StepId, operators.Operator] = {}
        self.reader: source_reader.SourceReader | None = None
        self.source_time: event_time.SourceEventTime | None = None
        """The source's watermarks, when the chain starts with a source that has event time."""
        self.rejects: dict[types.StepId, rejects_mod.Rejects] = {}
        """Per step with ``on_error`` skip or dead-letter: what it passed over."""
        plan = services.plan
        self._kg_range = key_groups.key_group_range(
            index, plan.parallelism, plan.flow.max_parallelism
        )
        self._states = services.keyed_states(task.task_id, index)

    @property
    def head_output(self) -> chain_outputs.StepOutput:
        """The output of the chain's first step: where a source's batches go."""
        return self.outputs[self._head]

    def process(self, batch: batch_mod.Batch, side: int) -> None:
        """Feed a batch that arrived on input ``side`` to the chain's first operator."""
        seen = self.counters.records_in
        seen[self._head] = seen.get(self._head, 0) + len(batch)
        self.ops[self._head].process(batch, side)

    def on_processing_time(self, now: float) -> float | None:
        """Fire due processing-time timers; seconds until the next one, if any."""
        now_ms = int(now * 1000)
        due = [t for op in self.ops.values() if (t := op.on_processing_time(now_ms)) is not None]
        return None if not due else max(0.0, (min(due) - now_ms) / 1000)

    def advance_watermark(self, watermark: int) -> None:
        """The head step's input watermark rose: its timers fire, then the watermark moves on."""
        self.ops[self._head].on_watermark(watermark)
        self.outputs[self._head].watermark(watermark)

    def time_changed(self, change: watermark_valve.Output, *, source: bool) -> None:
        """Pass on a new watermark and/or idle status of the head step's input (or, for a
        source, of its output): an idle status after the watermark, an active one before."""
        out = self.outputs[self._head]
        if change.idle is False:
            out.status(False)
        if change.watermark is not None:
            if source:
                out.watermark(change.watermark)
            else:
                self.advance_watermark(change.watermark)
        if change.idle is True:
            out.status(True)

    def snapshot_into(self, builder: operators.SnapshotBuilder) -> None:
        if self.reader is not None:
            self.reader.snapshot(builder)
        if self.source_time is not None:
            self.source_time.snapshot(builder)
        if self._valve is not None and self._event_time:
            builder.blobs.append(
                event_time.state_blob(self._head, builder.subtask, self._valve.snapshot())
            )
        for op in self.ops.values():
            op.snapshot(builder)

    def checkpoint_completed(self, checkpoint_id: types.CheckpointId) -> None:
        for op in self.ops.values():
            op.checkpoint_completed(checkpoint_id)

    def close(self) -> None:
        try:
            for op in self.ops.values():
                op.close()
            if self.reader is not None:
                self.reader.close()
        finally:
            self._states.close()

    # -- construction ------------------------------------------------------------------

    def build(self) -> None:
        """Create every step's operator from its factory and wire each output once."""
        plan = self._ctx.plan
        for step_id in self._task.steps:
            self.outputs[step_id] = chain_outputs.StepOutput(step_id, self.counters)
        for step_id in self._task.steps:
            step = plan.flow.step(step_id)
            rejects, dead_letters = rejects_mod.for_step(
                step, plan.flow.dead_letters, self._index, plan.parallelism, self._on_commit
            )
            if rejects is not None:
                self.rejects[step_id] = rejects
            if dead_letters is not None:
                self.ops[dead_letters.step_id] = dead_letters
            if isinstance(step, steps.SourceStep):
                continue  # read by the source reader, built at restore
            late = next((c.step_id for c in plan.consumers[step_id] if c.side_output), None)
            context = registry.OperatorContext(
                emit=self.outputs[step_id].emit,
                side_output=None if late is None else self.outputs[late].emit,
                reject=None if rejects is None else rejects.reject_record,
                key_group_range=self._kg_range,
                max_parallelism=plan.flow.max_parallelism,
                subtask=self._index,
                parallelism=plan.parallelism,
                clock=self._ctx.clock,
                on_commit=self._on_commit,
                states=self._states,
            )
            self.ops[step_id] = registry.create(step, context)
        for step_id in self._task.steps:
            self._wire(step_id, plan.consumers[step_id])

    def _wire(self, step_id: types.StepId, consumers: tuple[plan_mod.Consumer, ...]) -> None:
        """Connect ``step_id``'s output to each consumer: chained operator or network."""
        out = self.outputs[step_id]
        for consumer in consumers:
            target: chain_outputs.Output
            if consumer.chained:
                target = chain_outputs.ChainedOutput(
                    consumer.step_id,
                    self.ops[consumer.step_id],
                    consumer.side,
                    self.outputs[consumer.step_id],
                    self.counters,
                )
            else:
                target = chain_outputs.NetworkOutput(step_id, consumer, self._network)
            out.markers.append(target)
            if not consumer.side_output:  # its records come from the operator itself
                out.records.append(target)

    def _on_commit(self, checkpoint_id: types.CheckpointId) -> None:
        self._fault(faults.FaultPoint.COMMIT, checkpoint_id)

    def _fault(self, point: faults.FaultPoint, checkpoint_id: types.CheckpointId) -> None:
        self._ctx.faults.check(
            point,
            task=self._task.task_id,
            subtask=self._index,
            attempt=self._ctx.attempt,
            checkpoint_id=checkpoint_id,
        )

    # -- restore -------------------------------------------------------------------------

    def restore(self) -> int:
        """Open the reader and load the restore point's state; the number of records replayed."""
        meta = self._ctx.restore_point
        head = self._ctx.plan.flow.step(self._task.steps[0])
        positions = {} if meta is None else dict(meta.source_positions.get(head.step_id, {}))
        if isinstance(head, steps.SourceStep):
            source = self._ctx.worker_source(head.source, self._index)
            parts = sources.assign_partitions(
                source.partitions(), self._index, self._ctx.plan.parallelism
            )
            source_rejects = self.rejects.get(head.step_id)
            self.reader = source_reader.SourceReader(
                head,
                source,
                parts,
                positions,
                None if source_rejects is None else source_rejects.reject_read,
            )
            if head.watermarks is not None:
                handles = event_time.handles_of(meta, head.step_id)
                restored = [self._ctx.read_state(h) for h in handles]
                self.source_time = event_time.SourceEventTime(
                    head, parts, restored, now=self._ctx.clock.now()
                )
        elif self._valve is not None and self._event_time and meta is not None:
            handles = event_time.handles_of(meta, head.step_id)
            if meta.fingerprint.parallelism == self._ctx.plan.parallelism:
                handles = [h for h in handles if h.subtask == self._index]
            blobs = [self._ctx.read_state(h) for h in handles]
            event_time.restore_valve(self._valve, blobs, head.step_id)
            for op in self.ops.values():
                op.watermark_restored(self._valve.current)
        if meta is None:
            return 0
        self._fault(faults.FaultPoint.RESTORE, meta.checkpoint_id)
        lo, hi = self._kg_range
        for op in self.ops.values():
            if isinstance(op, operators.StatefulOperator):
                handles = sorted(
                    (
                        h
                        for h in meta.state_handles
                        if h.step_id == op.step_id
                        and h.kind is metadata.HandleKind.KEYED
                        and h.overlaps(lo, hi)
                    ),
                    key=lambda h: h.restore_order,  # bases, then deltas oldest first
                )
                op.restore(self._ctx.read_state(h) for h in handles)
        return self._replay_channel_state(meta)

    def _replay_channel_state(self, meta: metadata.CheckpointMetadata) -> int:
        entries = self._ctx.channel_state(meta)
        if not entries or self._task.is_source:
            return 0
        plan = self._ctx.plan
        key_fns = {e.side: e.key_fn for e in self._task.inputs}

        def owner_of(side: int, record: batch_mod.Record) -> int | None:
            key_fn = key_fns.get(side)
            if key_fn is None:
                return None
            kg = key_groups.key_group_for(key_fn(record), plan.flow.max_parallelism)
            return key_groups.subtask_for_key_group(kg, plan.parallelism, plan.flow.max_parallelism)

        same_layout = meta.fingerprint.parallelism == plan.parallelism
        replay = snapshots.filter_for_subtask(
            entries,
            self._task.task_id,
            self._index,
            plan.parallelism,
            owner_of,
            same_layout=same_layout,
        )
        channel_of = {
            (spec.edge.side, spec.upstream_subtask): i
            for i, spec in enumerate(self._task.channels(self._index, plan.parallelism))
        }
        head = self.ops[self._head]
        replayed = 0
        for side, sender, payload in replay:
            if isinstance(payload, tuple):
                head.process(batch_mod.Batch.from_rows(payload), side)
                replayed += len(payload)
            elif self._valve is not None and (side, sender) in channel_of:
                self._replay_marker(channel_of[(side, sender)], payload)
        return replayed

    def _replay_marker(
        self,
        channel: int,
        marker: messages.WatermarkMarker | messages.IdleMarker,
    ) -> None:
        """Feed a replayed event-time marker to the valve, as the gate would have."""
        assert self._valve is not None
        if isinstance(marker, messages.WatermarkMarker):
            out = self._valve.watermark(channel, marker.value)
        else:
            out = self._valve.status(channel, idle=marker.idle)
        if out.watermark is not None:
            self.advance_watermark(out.watermark)
