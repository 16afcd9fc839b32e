"""One running subtask: a chain of operators fed by a source or by an input gate.

Threading: each subtask runs on its own thread; everything here except
:meth:`Subtask.post` and the upload callbacks runs on that thread. The
subtask sleeps on its :class:`~barrier_runtime.task.channel.Signal`, which
channels and :meth:`post` notify.

Between two data batches the chain's state is consistent, and that is the
only place where snapshots happen. After each batch the subtask waits until
its output channels have capacity (back-pressure); while it waits it still
handles control messages and markers at the head of its input channels, so
an unaligned barrier is never stuck behind the data it is meant to overtake.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import TYPE_CHECKING

from barrier_runtime.alignment import handler as alignment_handler
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import sources, steps
from barrier_runtime.channels import messages
from barrier_runtime.core import metadata, types
from barrier_runtime.state import key_groups
from barrier_runtime.task import batch_operators, control, faults, operators, routing, snapshots
from barrier_runtime.task import channel as channel_mod
from barrier_runtime.task import rejects as rejects_mod

if TYPE_CHECKING:
    from barrier_runtime.graph import plan as plan_mod
    from barrier_runtime.task import attempt as attempt_mod

_IDLE_WAIT = 0.05

Route = tuple[types.StepId, types.StepId, int]
"""(upstream step, downstream head step, input side) of an edge leaving a task."""
Outputs = dict[Route, dict[int, channel_mod.OutputChannel]]
"""Per route, the output channel to each receiving subtask index."""


class Subtask:
    def __init__(
        self,
        ctx: attempt_mod.AttemptContext,
        task: plan_mod.TaskSpec,
        index: int,
        inputs: list[channel_mod.InputChannel],
        outputs: Outputs,
        signal: channel_mod.Signal,
    ) -> None:
        self.ctx = ctx
        self.task = task
        self.index = index
        self.key = metadata.TaskKey(task.task_id, index)
        self.signal = signal
        self.inputs = inputs
        self.specs = task.channels(index, ctx.plan.parallelism)
        self.outputs = outputs
        self.all_outputs = [ch for group in outputs.values() for ch in group.values()]
        self.finished = False
        self._shutdown = False
        self.records = 0
        self.records_in: dict[types.StepId, int] = {}
        self.rejects: dict[types.StepId, rejects_mod.Rejects] = {}
        """Per step with ``on_error`` skip or dead-letter: what it passed over."""
        self.records_out: dict[types.StepId, int] = {}
        self.backpressure_seconds = 0.0
        self._control: collections.deque[control.ControlMessage] = collections.deque()
        self._control_lock = threading.Lock()
        self._blocked: set[int] = set()
        self._closed: set[int] = set()
        self._rr = 0
        self._last_snapshot: int = 0
        self._direct_pending: types.Barrier | None = None
        self._capturing: dict[int, snapshots.PendingSnapshot] = {}
        self._arriving: tuple[types.Barrier, int, list[batch_mod.Batch]] | None = None
        """A priority barrier being taken, with the data it overtook at this end."""
        self.ops: dict[types.StepId, operators.Operator] = {}
        self.reader: operators.SourceReader | None = None
        self._kg_range = key_groups.key_group_range(
            index, ctx.plan.parallelism, ctx.plan.flow.max_parallelism
        )
        self.handler = (
            alignment_handler.create_barrier_handler(
                ctx.config, len(self.specs), _Controller(self), ctx.clock
            )
            if self.specs
            else None
        )

    # -- called from other threads ---------------------------------------------

    def post(self, message: control.ControlMessage) -> None:
        with self._control_lock:
            self._control.append(message)
        self.signal.notify()

    # -- thread body --------------------------------------------------------------

    def run(self) -> None:
        try:
            self._build_operators()
            self._restore()
            if self.task.is_source:
                self._run_source()
            else:
                self._run_gate()
        except BaseException as exc:
            self.ctx.fail(exc, self.key)
        finally:
            for op in self.ops.values():
                op.close()
            if self.reader is not None:
                self.reader.close()

    def _run_source(self) -> None:
        assert self.reader is not None
        while not self._handle_control():
            if self.finished:
                self._sleep()
                continue
            batch = self.reader.poll()
            if batch is None:
                self._finish()
            elif len(batch):
                self._emit_from(self.reader.step_id, batch)
                self._after_batch(len(batch))
            else:
                self._sleep(0.005)

    def _run_gate(self) -> None:
        while not self._handle_control():
            assert self.handler is not None
            self.handler.check_timeouts()
            picked = self._next_input()
            if picked is None:
                self._sleep()
                continue
            self._dispatch(*picked)

    # -- input ---------------------------------------------------------------------

    def _next_input(self) -> tuple[int, channel_mod.Item] | None:
        n = len(self.inputs)
        for step in range(n):
            ch = (self._rr + step) % n
            if ch in self._blocked or ch in self._closed:
                continue
            item = self.inputs[ch].take()
            if item is not None:
                self._rr = ch + 1
                return ch, item
        return None

    def _dispatch(self, ch: int, item: channel_mod.Item) -> None:
        assert self.handler is not None
        if isinstance(item, batch_mod.Batch):
            side = self.specs[ch].edge.side
            capture_for = self.handler.record_received(ch)
            if capture_for is not None and capture_for in self._capturing:
                self._capturing[capture_for].capture_input(side, item.rows())
            head = self.task.steps[0]
            self.records_in[head] = self.records_in.get(head, 0) + len(item)
            self.ops[head].process(item, side)
            self._after_batch(len(item))
        elif isinstance(item, types.Barrier):
            self._barrier_taken(ch, item)
        elif isinstance(item, messages.CancelMarker):
            self.handler.cancel_received(ch, item.checkpoint_id)
        else:
            self._closed.add(ch)
            self.handler.end_of_partition(ch)
            if len(self._closed) == len(self.inputs):
                self._finish()

    def _barrier_taken(self, ch: int, barrier: types.Barrier) -> None:
        """Hand ``barrier`` to the handler; data it overtook at this end is channel state.

        A network input channel keeps the batches a priority barrier overtook on
        arrival (they are still taken, after the barrier). They were sent before
        the barrier, so they belong to checkpoint *n*'s channel state: appended
        now if *n*'s snapshot is already capturing, else by :meth:`snapshot`
        when this barrier triggers it.
        """
        assert self.handler is not None
        overtaken = self.inputs[ch].drain_overtaken(barrier.checkpoint_id)
        if not overtaken:
            self.handler.barrier_received(ch, barrier)
            return
        side = self.specs[ch].edge.side
        capturing = self._capturing.get(barrier.checkpoint_id)
        if capturing is not None:
            for batch in overtaken:
                capturing.capture_input(side, batch.rows())
            self.handler.barrier_received(ch, barrier)
            return
        self._arriving = (barrier, side, overtaken)
        try:
            self.handler.barrier_received(ch, barrier)
        finally:
            self._arriving = None

    def _after_batch(self, count: int) -> None:
        self.records += count
        self.ctx.faults.check(
            faults.FaultPoint.PROCESSING,
            task=self.task.task_id,
            subtask=self.index,
            attempt=self.ctx.attempt,
            records=self.records,
        )
        self._await_capacity()

    def _await_capacity(self) -> None:
        """Back-pressure: wait for room downstream, still handling markers and control."""
        if all(ch.has_capacity() for ch in self.all_outputs):
            return
        started = time.monotonic()
        try:
            self._wait_for_capacity()
        finally:
            self.backpressure_seconds += time.monotonic() - started

    def _wait_for_capacity(self) -> None:
        while not all(ch.has_capacity() for ch in self.all_outputs):
            self.ctx.check_running()
            if self._handle_control():
                return
            marker = self._next_marker()
            if marker is not None:
                self._dispatch(*marker)
                continue
            with self.signal.cond:
                if not all(ch.has_capacity() for ch in self.all_outputs):
                    self.signal.cond.wait(_IDLE_WAIT)

    def _next_marker(self) -> tuple[int, channel_mod.Item] | None:
        for ch, chan in enumerate(self.inputs):
            if ch in self._blocked or ch in self._closed:
                continue
            head = chan.peek()
            if head is not None and not isinstance(head, batch_mod.Batch):
                item = chan.take()
                assert item is not None
                return ch, item
        return None

    def _sleep(self, timeout: float = _IDLE_WAIT) -> None:
        self.ctx.check_running()
        with self.signal.cond:
            if self._control or self._input_ready():
                return
            self.signal.cond.wait(timeout)

    def _input_ready(self) -> bool:
        return any(
            len(c) > 0
            for i, c in enumerate(self.inputs)
            if i not in self._blocked and i not in self._closed
        )

    # -- output --------------------------------------------------------------------

    def _emit_from(self, step_id: types.StepId, batch: batch_mod.Batch) -> None:
        n = len(batch)
        self.records_out[step_id] = self.records_out.get(step_id, 0) + n
        for consumer in self.ctx.plan.consumers[step_id]:
            if consumer.chained:
                target = consumer.step_id
                self.records_in[target] = self.records_in.get(target, 0) + n
                self.ops[target].process(batch, consumer.side)
                continue
            targets = self.outputs[(step_id, consumer.step_id, consumer.side)]
            if consumer.partitioning is steps.Partitioning.FORWARD:
                targets[self.index].put(batch)
            else:
                assert consumer.key_fn is not None
                parts = routing.split_by_owner(
                    batch,
                    consumer.key_fn,
                    consumer.key_column,
                    self.ctx.plan.parallelism,
                    self.ctx.plan.flow.max_parallelism,
                    step_id,
                )
                for owner, part in parts:
                    targets[owner].put(part)

    def _broadcast(self, item: channel_mod.Item) -> None:
        for ch in self.all_outputs:
            ch.put(item)

    def _finish(self) -> None:
        self.finished = True
        self._broadcast(messages.END_OF_PARTITION)
        pending = self._direct_pending
        if pending is not None and pending.checkpoint_id > self._last_snapshot:
            self.snapshot(pending, 0.0, forward=False)
        self.ctx.task_finished(self.key)

    # -- control -------------------------------------------------------------------

    def _handle_control(self) -> bool:
        """Process queued control messages; True when the subtask must stop."""
        self.ctx.check_running()
        while not self._shutdown:
            with self._control_lock:
                if not self._control:
                    return False
                message = self._control.popleft()
            if isinstance(message, control.Shutdown):
                self._shutdown = True
            elif isinstance(message, control.TriggerCheckpoint):
                self._triggered(message.barrier)
            elif isinstance(message, control.CheckpointCompleted):
                self._completed(message.metadata.checkpoint_id)
            else:
                self._capturing.pop(message.checkpoint_id, None)
        return True

    def _triggered(self, barrier: types.Barrier) -> None:
        if barrier.checkpoint_id <= self._last_snapshot:
            return
        if self.task.is_source and not self.finished:
            self.snapshot(barrier, 0.0, forward=True)  # inject the barrier
        elif self.finished:
            self.snapshot(barrier, 0.0, forward=False)
        else:
            self._direct_pending = barrier  # snapshot at end of input unless a barrier comes

    def _completed(self, checkpoint_id: types.CheckpointId) -> None:
        for op in self.ops.values():
            op.checkpoint_completed(checkpoint_id)
        for cid in [c for c in self._capturing if c <= checkpoint_id]:
            del self._capturing[cid]

    def _on_commit(self, checkpoint_id: types.CheckpointId) -> None:
        self.ctx.faults.check(
            faults.FaultPoint.COMMIT,
            task=self.task.task_id,
            subtask=self.index,
            attempt=self.ctx.attempt,
            checkpoint_id=checkpoint_id,
        )

    # -- snapshots -----------------------------------------------------------------

    def snapshot(self, barrier: types.Barrier, alignment: float, *, forward: bool) -> None:
        started = time.monotonic()
        n = barrier.checkpoint_id
        self.ctx.faults.check(
            faults.FaultPoint.SNAPSHOT,
            task=self.task.task_id,
            subtask=self.index,
            attempt=self.ctx.attempt,
            checkpoint_id=n,
        )
        builder = operators.SnapshotBuilder(n, self.index)
        if self.reader is not None:
            self.reader.snapshot(builder)
        for op in self.ops.values():
            op.snapshot(builder)
        capture = barrier.unaligned and bool(self.inputs) and len(self._closed) < len(self.inputs)
        pending = snapshots.PendingSnapshot(
            barrier=barrier,
            task=self.key,
            builder=builder,
            started=started,
            sync_duration=0.0,
            alignment_duration=alignment,
            awaiting_channel_state=capture,
            send_ack=self.ctx.acknowledge,
        )
        arriving = self._arriving
        if capture and arriving is not None and arriving[0].checkpoint_id == n:
            for batch in arriving[2]:
                pending.capture_input(arriving[1], batch.rows())
        if forward:
            self._forward(barrier, pending)
        pending.sync_duration = time.monotonic() - started
        self._last_snapshot = n
        if capture:
            pending.add_upload()
            self._capturing[n] = pending
        elif barrier.unaligned and pending.output_state:
            pending.add_upload()
            self.ctx.upload_channel_state(pending)
        self.ctx.upload(pending)

    def _forward(self, barrier: types.Barrier, pending: snapshots.PendingSnapshot) -> None:
        if not barrier.unaligned:
            self._broadcast(barrier)
            return
        for (_, target_step, side), group in self.outputs.items():
            target_task = self.ctx.plan.task_of[target_step]
            for target_subtask, chan in group.items():
                overtaken = chan.put_priority(barrier)
                for batch in overtaken:
                    pending.output_state.append(
                        snapshots.InFlight(
                            target_task, side, target_subtask, "output", batch.rows()
                        )
                    )

    def channel_state_complete(self, checkpoint_id: types.CheckpointId) -> None:
        pending = self._capturing.pop(checkpoint_id, None)
        if pending is not None:
            self.ctx.upload_channel_state(pending)

    def abort(self, checkpoint_id: types.CheckpointId, reason: types.FailureReason) -> None:
        self._capturing.pop(checkpoint_id, None)
        self._broadcast(messages.CancelMarker(checkpoint_id))
        self.ctx.decline(checkpoint_id, self.key, reason)

    # -- construction and restore -------------------------------------------------------

    def _build_operators(self) -> None:
        plan = self.ctx.plan
        for step_id in self.task.steps:
            step = plan.flow.step(step_id)
            emit = self._emitter(step_id)
            rejects, dead_letters = rejects_mod.for_step(
                step, plan.flow.dead_letters, self.index, plan.parallelism, self._on_commit
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
            elif isinstance(step, steps.MapBatchesStep):
                op = operators.MapBatchesOperator(step, emit, reject)
            elif isinstance(step, steps.KeyByStep | steps.MergeStep):
                op = operators.PassThroughOperator(step.step_id, emit)
            elif isinstance(step, steps.StatefulStep | steps.ConnectStep):
                op = operators.KeyedOperator(
                    step, emit, self._kg_range, plan.flow.max_parallelism, reject
                )
            elif isinstance(step, steps.KeyedSumStep):
                op = batch_operators.KeyedSumOperator(
                    step, emit, self._kg_range, plan.flow.max_parallelism
                )
            else:
                writer = step.sink.writer(step.step_id, self.index, plan.parallelism)
                op = operators.SinkOperator(step, writer, self._on_commit)
            self.ops[step_id] = op

    def _emitter(self, step_id: types.StepId) -> operators.Emit:
        return lambda batch: self._emit_from(step_id, batch)

    def _restore(self) -> None:
        meta = self.ctx.restore_point
        head = self.ctx.plan.flow.step(self.task.steps[0])
        positions = {} if meta is None else dict(meta.source_positions.get(head.step_id, {}))
        if isinstance(head, steps.SourceStep):
            parts = sources.assign_partitions(
                head.source.partitions(), self.index, self.ctx.plan.parallelism
            )
            source_rejects = self.rejects.get(head.step_id)
            self.reader = operators.SourceReader(
                head,
                parts,
                positions,
                None if source_rejects is None else source_rejects.reject_read,
            )
        if meta is None:
            return
        self.ctx.faults.check(
            faults.FaultPoint.RESTORE,
            task=self.task.task_id,
            subtask=self.index,
            attempt=self.ctx.attempt,
            checkpoint_id=meta.checkpoint_id,
        )
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
                op.restore(self.ctx.read_state(h) for h in handles)
        self._replay_channel_state(meta)

    def _replay_channel_state(self, meta: metadata.CheckpointMetadata) -> None:
        entries = self.ctx.channel_state(meta)
        if not entries or self.task.is_source:
            return
        plan = self.ctx.plan
        key_fns = {e.side: e.key_fn for e in self.task.inputs}

        def owner_of(side: int, record: batch_mod.Record) -> int | None:
            key_fn = key_fns.get(side)
            if key_fn is None:
                return None
            kg = key_groups.key_group_for(key_fn(record), plan.flow.max_parallelism)
            return key_groups.subtask_for_key_group(kg, plan.parallelism, plan.flow.max_parallelism)

        replay = snapshots.filter_for_subtask(
            entries, self.task.task_id, self.index, plan.parallelism, owner_of
        )
        head = self.ops[self.task.steps[0]]
        for side, rows in replay:
            head.process(batch_mod.Batch.from_rows(rows), side)
            self.records += len(rows)


class _Controller:
    """The narrow interface the barrier handler uses to act on its subtask."""

    def __init__(self, subtask: Subtask) -> None:
        self._subtask = subtask

    def block_channel(self, channel: int) -> None:
        self._subtask._blocked.add(channel)

    def unblock_all(self) -> None:
        self._subtask._blocked.clear()
        self._subtask.signal.notify()

    def snapshot_state(self, barrier: types.Barrier, alignment_duration: float) -> None:
        self._subtask.snapshot(barrier, alignment_duration, forward=True)

    def channel_state_complete(self, checkpoint_id: types.CheckpointId) -> None:
        self._subtask.channel_state_complete(checkpoint_id)

    def abort_checkpoint(
        self, checkpoint_id: types.CheckpointId, reason: types.FailureReason
    ) -> None:
        self._subtask.abort(checkpoint_id, reason)
