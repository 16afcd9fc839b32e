"""The in-process executor: runs a dataflow on P slices of threads, with real checkpoints.

It plays the driver's role in one process: it plans the dataflow, owns the
checkpoint coordinator, runs attempts and restarts failed ones from the
latest completed checkpoint. It uses the same barrier handlers, coordinator,
state and checkpoint store as the distributed runtime; only the channels are
in-memory queues instead of TCP connections.

Restart loop (numbered as in the code):

1. Choose the restore point: an explicit one on the first attempt, otherwise
   the newest valid checkpoint in the store. Never silently start empty when
   checkpoints exist (the store refuses unless ``allow_fresh_start``).
2. Publish the restore point's pending sink transactions again (idempotent),
   then let sinks discard data staged by attempts that never completed.
3. Start every subtask; tick the coordinator until all subtasks finished or
   anything failed.
4. On end of input, take a final checkpoint so the last transactions are
   published exactly once, then shut the subtasks down.
5. On failure, tear the attempt down, abort pending checkpoints, back off
   and go to 1 — unless the restart budget is spent.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass, field

from barrier_runtime.api import dataflow, steps
from barrier_runtime.checkpoint import coordinator as coordinator_mod
from barrier_runtime.checkpoint import metadata, outcomes, stats, types
from barrier_runtime.clock import Clock, SystemClock
from barrier_runtime.control import job
from barrier_runtime.graph import plan as plan_mod
from barrier_runtime.local import attempt as attempt_mod
from barrier_runtime.local import control, faults
from barrier_runtime.local import subtask as subtask_mod
from barrier_runtime.storage import checkpoint_store

log = logging.getLogger(__name__)


class JobFailedError(RuntimeError):
    """The job failed more often than its restart budget allows."""


@dataclass
class JobResult:
    """What happened during a run."""

    attempts: int = 0
    restarts: int = 0
    failures: list[str] = field(default_factory=list)
    completed_checkpoints: list[int] = field(default_factory=list)
    restored_from: list[int | None] = field(default_factory=list)
    final_checkpoint: int | None = None
    stopped_with_savepoint: str | None = None
    """Path of the savepoint the job was stopped with, if it was."""


class LocalExecutor:
    """Runs ``flow`` with ``parallelism`` slices until its sources are exhausted."""

    def __init__(
        self,
        flow: dataflow.Dataflow,
        *,
        parallelism: int,
        store: checkpoint_store.CheckpointStore,
        config: types.CheckpointConfig | None = None,
        clock: Clock | None = None,
        fault_injector: faults.FaultInjector | None = None,
        max_restarts: int = 10,
        restart_backoff: float = 0.0,
        channel_capacity: int = 8,
        restore_from: int | str | None = None,
        allow_fresh_start: bool = False,
        tick_interval: float = 0.005,
    ) -> None:
        self.plan = plan_mod.plan(flow, parallelism)
        self.store = store
        self.config = config or types.CheckpointConfig()
        self.clock = clock or SystemClock()
        self.faults = fault_injector or faults.FaultInjector()
        self.max_restarts = max_restarts
        self.restart_backoff = restart_backoff
        self.channel_capacity = channel_capacity
        self.restore_from = restore_from
        self.allow_fresh_start = allow_fresh_start
        self.tick_interval = tick_interval
        self.result = JobResult()
        self._subtasks: list[subtask_mod.Subtask] = []
        self._subtasks_lock = threading.Lock()
        self.coordinator = coordinator_mod.CheckpointCoordinator(
            self.config,
            clock=self.clock,
            gateway=_Gateway(self),
            store=store,
            tasks=self.plan.task_keys(),
            fingerprint=self.plan.fingerprint(),
            first_checkpoint_id=store.highest_checkpoint_id() + 1,
            on_failover=self._checkpoint_failover,
        )
        self._ctx: attempt_mod.AttemptContext | None = None
        self._running = threading.Event()
        self._state = job.JobState.CREATED
        self._started_at = self.clock.now()
        self._stop_requested = threading.Event()
        """Periodic checkpoints pause: a savepoint for stopping is being taken."""
        self._shutdown = threading.Event()
        """Leave the run loop after shutting subtasks down cleanly."""
        self._metrics_lock = threading.Lock()
        self._records_in: dict[str, int] = {}
        self._records_out: dict[str, int] = {}
        self._backpressure: dict[str, float] = {}

    # -- the control seam (barrier_runtime.control.job.JobControl) --------------------

    def info(self) -> job.JobInfo:
        result = self.result
        return job.JobInfo(
            name=self.plan.flow.name,
            state=self._state,
            attempt=max(result.attempts - 1, 0),
            restarts=result.restarts,
            parallelism=self.plan.parallelism,
            max_parallelism=self.plan.flow.max_parallelism,
            start_time=self._started_at,
            ready=self._running.is_set(),
            restored_from=result.restored_from[-1] if result.restored_from else None,
            failure=result.failures[-1] if result.failures else None,
        )

    def trigger_checkpoint(
        self, kind: types.CheckpointKind = types.CheckpointKind.CHECKPOINT
    ) -> outcomes.TriggerOutcome:
        return self.coordinator.trigger_checkpoint(kind)

    def checkpoint_stats(self) -> stats.CheckpointStats:
        return self.coordinator.stats()

    def runtime_metrics(self) -> job.RuntimeMetrics:
        with self._metrics_lock:
            records_in, records_out = dict(self._records_in), dict(self._records_out)
            backpressure = dict(self._backpressure)
        with self._subtasks_lock:
            live = list(self._subtasks)
        _accumulate(live, records_in, records_out, backpressure)
        return job.RuntimeMetrics(records_in, records_out, backpressure)

    def stop_with_savepoint(self, timeout: float) -> outcomes.CheckpointOutcome:
        """Take an aligned savepoint, then stop every subtask cleanly; return its outcome.

        Periodic checkpoints pause first, so no checkpoint after the savepoint can
        publish sink transactions that a restore from the savepoint would redo.
        """
        if not self._running.is_set():
            raise job.SavepointFailedError("the job is not running; nothing to stop")
        self._stop_requested.set()
        self._state = job.JobState.STOPPING
        outcome = self.coordinator.trigger_checkpoint(types.CheckpointKind.SAVEPOINT)
        done = (
            self.coordinator.wait_for(outcome.checkpoint_id, timeout)
            if outcome.checkpoint_id is not None
            else None
        )
        if done is None or not done.completed:
            self._stop_requested.clear()
            self._state = job.JobState.RUNNING
            why = outcome.message if done is None else (done.message or done.status.value)
            raise job.SavepointFailedError(f"stop-with-savepoint failed, job keeps running: {why}")
        self.result.stopped_with_savepoint = done.path
        self._shutdown.set()
        ctx = self._ctx
        if ctx is not None:
            with ctx.changed:
                ctx.changed.notify_all()
        return done

    def wait_running(self, timeout: float) -> bool:
        """Block until an attempt's subtasks are running (True) or ``timeout`` passes."""
        return self._running.wait(timeout)

    def run(self) -> JobResult:
        """Run to completion; raise :class:`JobFailedError` when the restart budget is spent."""
        attempt = 0
        try:
            return self._run_loop(attempt)
        except BaseException:
            self._state = job.JobState.FAILED
            raise

    def _run_loop(self, attempt: int) -> JobResult:
        while True:
            self._state = job.JobState.RUNNING if attempt == 0 else job.JobState.RESTARTING
            # Step 1
            restore = self._restore_point(attempt)
            self.result.restored_from.append(None if restore is None else restore.checkpoint_id)
            ctx = self._new_attempt(attempt, restore)
            try:
                # Step 2
                if restore is not None:
                    self._recommit(restore, ctx)
                for step in self.plan.flow.steps:
                    if isinstance(step, steps.SinkStep):
                        step.sink.recover(step.step_id)
                # Steps 3 and 4
                if self._run_attempt(ctx):
                    stopped = self.result.stopped_with_savepoint is not None
                    self._state = job.JobState.STOPPED if stopped else job.JobState.FINISHED
                    return self.result
            except Exception as exc:
                ctx.fail(exc)
            finally:
                self._teardown(ctx)
            # Step 5
            failure = ctx.failure
            reason = f"{type(failure).__name__}: {failure}" if failure else "unknown failure"
            where = f" in {ctx.failed_task}" if ctx.failed_task else ""
            self.result.failures.append(f"attempt {attempt}{where}: {reason}")
            self.coordinator.abort_all_pending(types.FailureReason.TASK_FAILURE)
            if self.result.restarts >= self.max_restarts:
                raise JobFailedError(
                    f"job failed {self.result.restarts + 1} times, more than the restart budget "
                    f"of {self.max_restarts}; last failure{where}: {reason}"
                ) from failure
            self.result.restarts += 1
            log.info("attempt %d failed%s: %s; restarting", attempt, where, reason)
            if self.restart_backoff:
                time.sleep(self.restart_backoff)
            attempt += 1

    # -- one attempt --------------------------------------------------------------------

    def _restore_point(self, attempt: int) -> metadata.CheckpointMetadata | None:
        if attempt == 0 and self.restore_from is not None:
            return self.store.load(self.restore_from)
        return self.store.select_restore_point(allow_fresh_start=self.allow_fresh_start)

    def _new_attempt(
        self, attempt: int, restore: metadata.CheckpointMetadata | None
    ) -> attempt_mod.AttemptContext:
        self.result.attempts += 1
        ctx = attempt_mod.AttemptContext(
            plan=self.plan,
            config=self.config,
            clock=self.clock,
            store=self.store,
            fault_injector=self.faults,
            attempt=attempt,
            restore_point=restore,
            acknowledge=self.coordinator.acknowledge,
            decline=lambda cid, task, reason: self.coordinator.decline(
                cid, task, reason, f"{task} declined checkpoint {cid}: {reason.value}"
            ),
        )
        self._ctx = ctx
        return ctx

    def _recommit(
        self, restore: metadata.CheckpointMetadata, ctx: attempt_mod.AttemptContext
    ) -> None:
        sinks = {s.step_id: s for s in self.plan.flow.steps if isinstance(s, steps.SinkStep)}
        for step_id, txns in restore.sink_transactions.items():
            step = sinks.get(step_id)
            if step is None:
                continue
            for txn in txns:
                ctx.faults.check(
                    faults.FaultPoint.COMMIT,
                    task="<restore>",
                    subtask=0,
                    attempt=ctx.attempt,
                    checkpoint_id=restore.checkpoint_id,
                )
                step.sink.commit(txn)

    def _run_attempt(self, ctx: attempt_mod.AttemptContext) -> bool:
        """True when the job finished and its final checkpoint completed."""
        subtasks = attempt_mod.build_subtasks(ctx, self.channel_capacity)
        with self._subtasks_lock:
            self._subtasks = subtasks
        self.coordinator.reset_for_restart(self.plan.task_keys())
        threads = [
            threading.Thread(target=s.run, name=f"{s.key}-a{ctx.attempt}", daemon=True)
            for s in subtasks
        ]
        for t in threads:
            t.start()
        self._running.set()
        self._state = job.JobState.RUNNING
        try:
            while not ctx.all_finished.is_set() and not self._shutdown.is_set():
                if ctx.stopping.is_set():
                    return False
                if not self._stop_requested.is_set():
                    self.coordinator.tick()
                with ctx.changed:
                    ctx.changed.wait(self.tick_interval)
            final = None
            if not self._shutdown.is_set():
                final = self._final_checkpoint(ctx)
                if final is None:
                    return False
            for s in subtasks:
                s.post(control.Shutdown())
            for t in threads:
                t.join()
            if ctx.failure is not None:
                return False
            self.result.final_checkpoint = final
            return True
        finally:
            ctx.stop()
            for t in threads:
                t.join(timeout=30)

    def _final_checkpoint(self, ctx: attempt_mod.AttemptContext) -> int | None:
        while not ctx.stopping.is_set():
            outcome = self.coordinator.trigger_checkpoint()
            if outcome.checkpoint_id is None:
                self.coordinator.tick()
                time.sleep(self.tick_interval)
                continue
            done = self.coordinator.wait_for(outcome.checkpoint_id, timeout=self.config.timeout)
            if done.completed:
                return outcome.checkpoint_id
        return None

    def _teardown(self, ctx: attempt_mod.AttemptContext) -> None:
        self._running.clear()
        ctx.stop()
        ctx.close()
        with self._subtasks_lock:
            finished, self._subtasks = self._subtasks, []
        with self._metrics_lock:
            _accumulate(finished, self._records_in, self._records_out, self._backpressure)

    # -- coordinator callbacks ----------------------------------------------------------

    def _checkpoint_failover(self, reason: str) -> None:
        ctx = self._ctx
        if ctx is not None:
            ctx.fail(RuntimeError(f"too many checkpoint failures: {reason}"))

    def post_all(self, message: control.ControlMessage) -> None:
        with self._subtasks_lock:
            subtasks = list(self._subtasks)
        if not subtasks:
            raise RuntimeError("no subtasks are running")
        for s in subtasks:
            s.post(message)


def _accumulate(
    subtasks: list[subtask_mod.Subtask],
    records_in: dict[str, int],
    records_out: dict[str, int],
    backpressure: dict[str, float],
) -> None:
    for s in subtasks:
        for step, n in list(s.records_in.items()):
            records_in[step] = records_in.get(step, 0) + n
        for step, n in list(s.records_out.items()):
            records_out[step] = records_out.get(step, 0) + n
        task = s.task.task_id
        backpressure[task] = backpressure.get(task, 0.0) + s.backpressure_seconds


class _Gateway:
    def __init__(self, executor: LocalExecutor) -> None:
        self._executor = executor

    def trigger(self, barrier: types.Barrier) -> None:
        self._executor.post_all(control.TriggerCheckpoint(barrier))

    def notify_complete(self, meta: metadata.CheckpointMetadata) -> None:
        self._executor.result.completed_checkpoints.append(meta.checkpoint_id)
        # If torn down meanwhile, the next attempt re-commits from the metadata.
        with contextlib.suppress(RuntimeError):
            self._executor.post_all(control.CheckpointCompleted(meta))

    def notify_aborted(
        self, checkpoint_id: types.CheckpointId, reason: types.FailureReason
    ) -> None:
        with contextlib.suppress(RuntimeError):  # no attempt running: nothing to tell
            self._executor.post_all(control.CheckpointAborted(checkpoint_id, reason))
