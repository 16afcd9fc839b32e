"""The operator chain of one subtask: its source reader and operators, built and restored.

A task is a chain of steps; on each subtask :class:`OperatorChain` holds the
:class:`~barrier_runtime.task.source_reader.SourceReader` (if the chain starts
with a source) and one operator per other step, plus the dead-letter
operators of steps that reject to a dead-letter sink. Life cycle: built
(:meth:`OperatorChain.build`), restored from a checkpoint or started empty
(:meth:`OperatorChain.restore`, which also replays the channel state owed to
this subtask), then fed batches on the subtask thread, snapshotted between
batches (:meth:`OperatorChain.snapshot_into`), told about completed
checkpoints, and finally closed. Operators emit through the ``emit_from``
callback the subtask gives: routing to chained operators and output channels
is the subtask's.

Threading: everything runs on the subtask's thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from barrier_runtime.alignment import watermark_valve
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import sources, steps
from barrier_runtime.channels import messages
from barrier_runtime.core import faults, metadata, types
from barrier_runtime.state import key_groups
from barrier_runtime.task import (
    batch_operators,
    event_time,
    join_operator,
    operators,
    process_operator,
    snapshots,
    source_reader,
    window_agg_operator,
    window_operator,
)
from barrier_runtime.task import rejects as rejects_mod

if TYPE_CHECKING:
    from barrier_runtime.graph import plan as plan_mod
    from barrier_runtime.task import attempt as attempt_mod

EmitFrom = Callable[[types.StepId, batch_mod.Batch], None]
_EVENT_TIME_OPERATORS = (
    window_operator.WindowOperator,
    window_agg_operator.WindowAggOperator,
    process_operator.ProcessOperator,
    join_operator.IntervalJoinOperator,
)
WatermarkFrom = Callable[[types.StepId, int], None]


class OperatorChain:
    """The reader and operators of subtask ``index`` of ``task``."""

    def __init__(
        self,
        ctx: attempt_mod.AttemptContext,
        task: plan_mod.TaskSpec,
        index: int,
        emit_from: EmitFrom,
        watermark_from: WatermarkFrom,
        valve: watermark_valve.WatermarkValve | None = None,
    ) -> None:
        """``valve``: the input gate's watermark valve (tasks with inputs), whose state
        the chain snapshots and restores with the head step's."""
        self._ctx = ctx
        self._task = task
        self._index = index
        self._emit_from = emit_from
        self._watermark_from = watermark_from
        self._valve = valve
        self._event_time = any(
            isinstance(s, steps.SourceStep) and s.watermarks is not None
            for s in ctx.plan.flow.steps
        )
        self.ops: dict[types.StepId, operators.Operator] = {}
        self.reader: source_reader.SourceReader | None = None
        self.source_time: event_time.SourceEventTime | None = None
        """The source's watermarks, when the chain starts with a source that has event time."""
        self.rejects: dict[types.StepId, rejects_mod.Rejects] = {}
        """Per step with ``on_error`` skip or dead-letter: what it passed over."""
        plan = ctx.plan
        self._kg_range = key_groups.key_group_range(
            index, plan.parallelism, plan.flow.max_parallelism
        )

    def process(self, step_id: types.StepId, batch: batch_mod.Batch, side: int) -> None:
        self.ops[step_id].process(batch, side)

    def on_processing_time(self, now: float) -> float | None:
        """Fire due processing-time timers; seconds until the next one, if any."""
        now_ms = int(now * 1000)
        due = [t for op in self.ops.values() if (t := op.on_processing_time(now_ms)) is not None]
        return None if not due else max(0.0, (min(due) - now_ms) / 1000)

    def advance_watermark(self, step_id: types.StepId, watermark: int) -> None:
        """``step_id``'s input watermark rose: its timers fire, then the watermark moves on."""
        self.ops[step_id].on_watermark(watermark)
        self._watermark_from(step_id, watermark)

    def snapshot_into(self, builder: operators.SnapshotBuilder) -> None:
        if self.reader is not None:
            self.reader.snapshot(builder)
        if self.source_time is not None:
            self.source_time.snapshot(builder)
        if self._valve is not None and self._event_time:
            head = self._task.steps[0]
            builder.blobs.append(
                event_time.state_blob(head, builder.subtask, self._valve.snapshot())
            )
        for op in self.ops.values():
            op.snapshot(builder)

    def checkpoint_completed(self, checkpoint_id: types.CheckpointId) -> None:
        for op in self.ops.values():
            op.checkpoint_completed(checkpoint_id)

    def close(self) -> None:
        for op in self.ops.values():
            op.close()
        if self.reader is not None:
            self.reader.close()

    # -- construction ------------------------------------------------------------------

    def build(self) -> None:
        plan = self._ctx.plan
        for step_id in self._task.steps:
            step = plan.flow.step(step_id)
            emit = self._emitter(step_id)
            rejects, dead_letters = rejects_mod.for_step(
                step, plan.flow.dead_letters, self._index, plan.parallelism, self._on_commit
            )
            if rejects is not None:
                self.rejects[step_id] = rejects
            if dead_letters is not None:
                self.ops[dead_letters.step_id] = dead_letters
            reject = None if rejects is None else rejects.reject_record
            op: operators.Operator
            if isinstance(step, steps.SourceStep):
                continue
            if isinstance(step, steps.FlatMapStep):
                op = operators.FlatMapOperator(step, emit, reject)
            elif isinstance(step, steps.FilterStep):
                op = operators.FilterOperator(step, emit, reject)
            elif isinstance(step, steps.MapBatchesStep):
                op = operators.MapBatchesOperator(step, emit, reject)
            elif isinstance(step, steps.KeyByStep | steps.MergeStep | steps.SideOutputStep):
                op = operators.PassThroughOperator(step.step_id, emit)
            elif isinstance(step, steps.IntervalJoinStep):
                op = join_operator.IntervalJoinOperator(
                    step, emit, self._kg_range, plan.flow.max_parallelism
                )
            elif isinstance(step, steps.ProcessStep):
                op = process_operator.ProcessOperator(
                    step, emit, self._kg_range, plan.flow.max_parallelism, self._ctx.clock
                )
            elif isinstance(step, steps.WindowStep | steps.WindowAggStep):
                late = next(
                    (c.step_id for c in plan.consumers[step.step_id] if c.side_output), None
                )
                kind = (
                    window_operator.WindowOperator
                    if isinstance(step, steps.WindowStep)
                    else window_agg_operator.WindowAggOperator
                )
                op = kind(
                    step,  # type: ignore[arg-type]
                    emit,
                    None if late is None else self._emitter(late),
                    self._kg_range,
                    plan.flow.max_parallelism,
                )
            elif isinstance(step, steps.StatefulStep | steps.ConnectStep):
                op = operators.KeyedOperator(
                    step, emit, self._kg_range, plan.flow.max_parallelism, reject
                )
            elif isinstance(step, steps.KeyedSumStep):
                op = batch_operators.KeyedSumOperator(
                    step, emit, self._kg_range, plan.flow.max_parallelism
                )
            else:
                writer = step.sink.writer(step.step_id, self._index, plan.parallelism)
                op = operators.SinkOperator(step, writer, self._on_commit)
            self.ops[step_id] = op

    def _emitter(self, step_id: types.StepId) -> operators.Emit:
        return lambda batch: self._emit_from(step_id, batch)

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
                if isinstance(
                    op, window_operator.WindowOperator | process_operator.ProcessOperator
                ):
                    op.watermark_restored(self._valve.current)
        if meta is None:
            return 0
        self._fault(faults.FaultPoint.RESTORE, meta.checkpoint_id)
        lo, hi = self._kg_range
        for op in self.ops.values():
            if isinstance(op, operators.StatefulOperator):
                handles = [
                    h
                    for h in meta.state_handles
                    if h.step_id == op.step_id
                    and h.kind is metadata.HandleKind.KEYED
                    and h.overlaps(lo, hi)
                ]
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
        head_id = self._task.steps[0]
        head = self.ops[head_id]
        replayed = 0
        for side, sender, payload in replay:
            if isinstance(payload, tuple):
                head.process(batch_mod.Batch.from_rows(payload), side)
                replayed += len(payload)
            elif self._valve is not None and (side, sender) in channel_of:
                self._replay_marker(head_id, channel_of[(side, sender)], payload)
        return replayed

    def _replay_marker(
        self,
        head: types.StepId,
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
            self.advance_watermark(head, out.watermark)
