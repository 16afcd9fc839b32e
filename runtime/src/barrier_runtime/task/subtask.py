"""One running subtask: its loop, its operator chain and its output.

A subtask is three parts with narrow ports between them, as Flink splits
its ``StreamTask``:

* the :class:`~barrier_runtime.task.input_gate.InputGate` (tasks with
  inputs) picks the next input, blocks and closes channels through the
  barrier handler and captures unaligned channel state;
* :class:`~barrier_runtime.task.subtask_checkpointing.SubtaskCheckpointing`
  owns every snapshot from the copy to the acknowledgement;
* the subtask itself (this module) runs the loop and feeds each batch, once,
  to the :class:`~barrier_runtime.task.chain.OperatorChain`, whose operators
  call each other directly and write what leaves the task to the
  subtask's :class:`~barrier_runtime.task.output.SubtaskOutput` (the subtask
  is not re-entered per hop).

The subtask sees its attempt only through :class:`SubtaskServices`.

Threading: each subtask runs on its own thread; everything here except
:meth:`Subtask.post` runs on that thread. The subtask sleeps on its
:class:`~barrier_runtime.task.channel.Signal`, which channels and
:meth:`post` notify.

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
from typing import TYPE_CHECKING, Protocol

from barrier_runtime.alignment import watermark_valve
from barrier_runtime.channels import errors as channel_errors
from barrier_runtime.channels import messages
from barrier_runtime.core import faults, metadata, task_messages, types
from barrier_runtime.task import chain as chain_mod
from barrier_runtime.task import channel as channel_mod
from barrier_runtime.task import event_time, source_reader, subtask_checkpointing
from barrier_runtime.task import input_gate as gate_mod
from barrier_runtime.task import output as output_mod
from barrier_runtime.task import rejects as rejects_mod

if TYPE_CHECKING:
    from barrier_runtime.graph import plan as plan_mod

_IDLE_WAIT = 0.05


class SubtaskServices(chain_mod.ChainServices, subtask_checkpointing.CheckpointServices, Protocol):
    """What the attempt offers a subtask: the chain's and the checkpointing's services,
    the checkpoint configuration, and the attempt's life cycle."""

    @property
    def config(self) -> types.CheckpointConfig: ...

    def fail(self, exc: BaseException, task: metadata.TaskKey | None = None) -> None: ...

    def check_running(self) -> None:
        """Raise when the attempt is being torn down."""

    def task_finished(self, task: metadata.TaskKey) -> None: ...


class Subtask:
    def __init__(
        self,
        ctx: SubtaskServices,
        task: plan_mod.TaskSpec,
        index: int,
        inputs: list[channel_mod.InputChannel],
        outputs: output_mod.Outputs,
        signal: channel_mod.Signal,
    ) -> None:
        self.ctx = ctx
        self.task = task
        self.index = index
        self.key = metadata.TaskKey(task.task_id, index)
        self.signal = signal
        self.output = output_mod.SubtaskOutput(ctx.plan, index, outputs)
        self.finished = False
        self._shutdown = False
        self._shutdown_posted = False
        """A ``Shutdown`` was posted (it may still wait in the queue)."""
        self.records = 0
        self.backpressure_seconds = 0.0
        self.restored = threading.Event()
        """Set once the subtask's state is restored, or once its run ended without that (a
        failed restore fails the attempt): a host reports its subtasks running after it."""
        self._control: collections.deque[task_messages.ControlMessage] = collections.deque()
        self._control_lock = threading.Lock()
        specs = task.channels(index, ctx.plan.parallelism)
        valve = watermark_valve.WatermarkValve(len(inputs)) if specs else None
        self.chain = chain_mod.OperatorChain(ctx, task, index, self.output, valve)
        self.checkpointing = subtask_checkpointing.SubtaskCheckpointing(
            self.key, ctx, self.chain, self.output
        )
        self.gate = (
            gate_mod.InputGate(
                inputs,
                [spec.edge.side for spec in specs],
                ctx.config,
                ctx.clock,
                self.checkpointing,
                signal,
                valve,
                [spec.upstream_subtask for spec in specs],
            )
            if specs
            else None
        )

    @property
    def rejects(self) -> dict[types.StepId, rejects_mod.Rejects]:
        """Per step with ``on_error`` skip or dead-letter: what it passed over."""
        return self.chain.rejects

    # -- called from other threads ---------------------------------------------

    def post(self, message: task_messages.ControlMessage) -> None:
        with self._control_lock:
            self._control.append(message)
            if isinstance(message, task_messages.Shutdown):
                self._shutdown_posted = True
        self.signal.notify()

    # -- thread body --------------------------------------------------------------

    def run(self) -> None:
        try:
            self.chain.build()
            self.records += self.chain.restore()
            self.restored.set()
            if self.gate is None:
                self._run_source()
            else:
                self._run_gate(self.gate)
        except channel_errors.ChannelClosedError as exc:
            if not self._shutdown_posted:
                self.ctx.fail(exc, self.key)
                return
            self._leave_after_peer_left(exc)
        except BaseException as exc:
            self.ctx.fail(exc, self.key)
        finally:
            self.restored.set()
            self.chain.close()

    def _leave_after_peer_left(self, exc: channel_errors.ChannelClosedError) -> None:
        """A peer worker left after the attempt's ``Shutdown`` while this subtask was still
        reading or sending (a stop with a savepoint ends the subtasks of each worker as
        they get to it): not a failure. The checkpoint notifications queued before the
        ``Shutdown`` are still handled (sinks commit), then the subtask leaves."""
        try:
            self._handle_control()
        except BaseException as late:
            late.__context__ = exc
            self.ctx.fail(late, self.key)

    def _run_source(self) -> None:
        reader = self.chain.reader
        assert reader is not None, f"{self.key} has neither inputs nor a source"
        timing = self.chain.source_time
        clock = self.ctx.clock
        while not self._handle_control():
            if self.finished:
                self._sleep()
                continue
            batch = reader.poll()
            if timing is not None and reader.finished:
                timing.finished(reader.finished)
                reader.finished.clear()
            if batch is None:
                if timing is not None:
                    self._source_time(reader, timing)
                self._finish()
            elif len(batch):
                if timing is not None:
                    assert reader.last_partition is not None
                    timing.observe(reader.last_partition, batch, now=clock.now())
                self.chain.head_output.emit(batch)
                if timing is not None:
                    self._source_time(reader, timing)
                self._after_batch(len(batch))
            else:
                if timing is not None:
                    self._source_time(reader, timing)
                self._sleep(0.005)

    def _source_time(
        self, reader: source_reader.SourceReader, timing: event_time.SourceEventTime
    ) -> None:
        change = timing.poll(now=self.ctx.clock.now(), waiting=reader.waiting())
        self.chain.time_changed(change, source=True)

    def _run_gate(self, gate: gate_mod.InputGate) -> None:
        while not self._handle_control():
            gate.check_timeouts()
            wait = self.chain.on_processing_time(self.ctx.clock.now())
            polled = gate.poll()
            if polled is gate_mod.Polled.NOTHING:
                self._sleep(_IDLE_WAIT if wait is None else min(_IDLE_WAIT, wait))
                continue
            self._received(gate, polled)

    def _received(
        self, gate: gate_mod.InputGate, polled: gate_mod.DataBatch | gate_mod.Polled
    ) -> None:
        """Handle what the gate returned, wherever it was read (also while back-pressured)."""
        if isinstance(polled, gate_mod.DataBatch):
            self.chain.process(polled.batch, polled.side)
            self._after_batch(len(polled.batch))
            return
        # A marker may have moved the input's watermark: its timers fire now, before
        # anything else is read (and before the end of input finishes the subtask).
        change = gate.take_time_change()
        if change:
            self.chain.time_changed(change, source=False)
        if polled is gate_mod.Polled.END_OF_INPUT:
            self._finish()

    def _after_batch(self, count: int) -> None:
        self.records += count
        self.ctx.faults.check(
            faults.FaultPoint.PROCESSING,
            task=self.task.task_id,
            subtask=self.index,
            attempt=self.ctx.attempt,
            records=self.records,
        )
        if not self.output.has_capacity():
            started = time.monotonic()
            try:
                self._wait_for_capacity()
            finally:
                self.backpressure_seconds += time.monotonic() - started

    def _wait_for_capacity(self) -> None:
        """Back-pressure: wait for room downstream, still handling markers and control."""
        while not self.output.has_capacity():
            self.ctx.check_running()
            if self._handle_control():
                return
            if self.gate is not None:
                polled = self.gate.poll(markers_only=True)
                if polled is not gate_mod.Polled.NOTHING:
                    self._received(self.gate, polled)
                    continue
            with self.signal.cond:
                if not self.output.has_capacity():
                    self.signal.cond.wait(_IDLE_WAIT)

    def _sleep(self, timeout: float = _IDLE_WAIT) -> None:
        self.ctx.check_running()
        with self.signal.cond:
            if self._control or (self.gate is not None and self.gate.input_ready()):
                return
            self.signal.cond.wait(timeout)

    def _finish(self) -> None:
        self.finished = True
        self.output.broadcast(messages.END_OF_PARTITION)
        self.checkpointing.input_finished()
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
            if isinstance(message, task_messages.Shutdown):
                self._shutdown = True
            elif isinstance(message, task_messages.TriggerCheckpoint):
                self.checkpointing.triggered(
                    message.barrier, source=self.task.is_source, finished=self.finished
                )
            elif isinstance(message, task_messages.CheckpointCompleted):
                cid = message.metadata.checkpoint_id
                self.chain.checkpoint_completed(cid)
                self._dropped(cid, and_older=True)
            else:
                self._dropped(message.checkpoint_id, and_older=False)
        return True

    def _dropped(self, checkpoint_id: types.CheckpointId, *, and_older: bool) -> None:
        if self.gate is not None:
            self.gate.drop_capture(checkpoint_id, and_older=and_older)
        self.checkpointing.dropped(checkpoint_id, and_older=and_older)
