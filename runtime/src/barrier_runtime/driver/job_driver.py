"""The driver's restart loop, shared by the in-process executor and the Spark driver.

The driver plans nothing and hosts nothing: it owns the checkpoint
coordinator and runs attempts through an
:class:`~barrier_runtime.driver.attempts.AttemptRunner`. Restart loop
(numbered as in the code):

1. Choose the restore point: an explicit one on the first attempt, otherwise
   the newest valid checkpoint in the store. Never silently start empty when
   checkpoints exist (the store refuses unless ``allow_fresh_start``).
2. Publish the restore point's pending sink transactions again (idempotent),
   then let sinks discard data staged by attempts that never completed.
3. Start the attempt; once every subtask runs, tick the coordinator until all
   subtasks finished or anything failed.
4. On end of input, take a final checkpoint so the last transactions are
   published exactly once, then shut the subtasks down.
5. On failure, tear the attempt down, abort pending checkpoints and remove what
   they left in the store (:mod:`~barrier_runtime.driver.cleanup`, also done
   when the job ends, however it ends). A failure
   that no restart can heal (:class:`~barrier_runtime.restart.SameFailureLimit`:
   an invalid pipeline, or the same record failing the same step again) raises
   :class:`UnrecoverableJobError`; otherwise ask the restart policy, back off and
   go to 1 — or raise :class:`JobFailedError` when its budget is spent.

Threading: :meth:`JobDriver.run` runs on one thread; the control seam
(:class:`~barrier_runtime.control.job.JobControl`) is called from others.
"""

from __future__ import annotations

import logging
import threading
import time

from barrier_runtime import task_failure
from barrier_runtime.checkpoint import coordinator as coordinator_mod
from barrier_runtime.checkpoint import outcomes, stats
from barrier_runtime.control import job
from barrier_runtime.core import faults, metadata, task_messages, task_metrics, types
from barrier_runtime.core.clock import Clock
from barrier_runtime.driver import attempts, cleanup, gateway, restart, run_result
from barrier_runtime.driver import restore as restore_mod
from barrier_runtime.graph import plan as plan_mod
from barrier_runtime.storage import checkpoint_store

log = logging.getLogger(__name__)


DEFAULT_ATTEMPTS_PER_RECORD = 3
"""Attempts a job makes on a record that fails the same way before it gives up."""
_ENDED = types.FailureReason.JOB_STOPPING


JobFailedError = run_result.JobFailedError
UnrecoverableJobError = run_result.UnrecoverableJobError
JobAbortedError = run_result.JobAbortedError
JobResult = run_result.JobResult


class JobDriver:
    """Runs a planned job through ``runner`` until its sources are exhausted or it is stopped."""

    def __init__(
        self,
        plan: plan_mod.ExecutionPlan,
        *,
        runner: attempts.AttemptRunner,
        store: checkpoint_store.CheckpointStore,
        config: types.CheckpointConfig,
        clock: Clock,
        restart_policy: restart.RestartPolicy,
        fault_injector: faults.FaultInjector | None = None,
        restore_from: int | str | None = None,
        allow_fresh_start: bool = False,
        attempts_per_record: int = DEFAULT_ATTEMPTS_PER_RECORD,
        tick_interval: float = 0.005,
        first_restore: restore_mod.Decided | None = None,
    ) -> None:
        """``first_restore``: what the first attempt restores, when the caller chose it."""
        self.plan = plan
        self.runner = runner
        self.store = store
        self.config = config
        self.clock = clock
        self.restart_policy = restart_policy
        self.same_failure = restart.SameFailureLimit(attempts_per_record)
        self.faults = fault_injector or faults.FaultInjector()
        self.restore_from = restore_from
        self.allow_fresh_start = allow_fresh_start
        self.first_restore = first_restore
        self.tick_interval = tick_interval
        self.result = JobResult()
        self.checkpoint_ids = restore_mod.checkpoint_ids(store)
        """The first checkpoint id this driver uses, and the ids earlier drivers left unused."""
        self.coordinator = coordinator_mod.CheckpointCoordinator(
            config,
            clock=clock,
            gateway=gateway.TaskGateway(self),
            store=store,
            tasks=plan.task_keys(),
            fingerprint=plan.fingerprint(),
            first_checkpoint_id=self.checkpoint_ids.first_id,
            on_failover=self._checkpoint_failover,
        )
        self._live: attempts.Attempt | None = None
        self._live_lock = threading.Lock()
        self._running = threading.Event()
        self._state = job.JobState.CREATED
        self._started_at = clock.now()
        self._stop_requested = threading.Event()
        """Periodic checkpoints pause: a savepoint for stopping is being taken."""
        self._shutdown = threading.Event()
        """Leave the run loop after shutting subtasks down cleanly."""
        self._finished_metrics = task_metrics.AttemptMetrics()
        self._abort_reason: str | None = None

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
            failure_detail=result.last_failure.detail if result.last_failure else None,
            failure_times=tuple(result.failure_times),
            startup_seconds=result.startup_seconds[-1] if result.startup_seconds else None,
        )

    def trigger_checkpoint(
        self, kind: types.CheckpointKind = types.CheckpointKind.CHECKPOINT
    ) -> outcomes.TriggerOutcome:
        return self.coordinator.trigger_checkpoint(kind)

    def checkpoint_stats(self) -> stats.CheckpointStats:
        return self.coordinator.stats()

    def runtime_metrics(self) -> job.RuntimeMetrics:
        with self._live_lock:
            total = self._finished_metrics.copy()
            live = self._live
            current = live.metrics() if live is not None else None
            if current is not None:
                total.add(current)
        return job.RuntimeMetrics(
            total.records_in,
            total.records_out,
            total.backpressure_seconds,
            total.records_rejected,
            total.arrival_latency,
            total.commit_latency,
            # watermarks are the running attempt's: a finished one's are behind it
            dict(current.watermarks) if current is not None else {},
            total.late_dropped,
            # so is the lag: a finished attempt's positions are not where the job reads
            dict(current.source_lag) if current is not None else {},
        )

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
        self.result.stopped_savepoint_id = int(done.checkpoint_id)
        self._shutdown.set()
        live = self._live
        if live is not None:
            live.wake()
        return done

    def abort(self, reason: str) -> None:
        """Cancel pending checkpoints (a stop's savepoint too) and leave the run loop, which
        raises :class:`JobAbortedError` with ``reason``; nothing newer than the latest
        completed checkpoint is published."""
        self._abort_reason = reason
        self._state = job.JobState.STOPPING
        self.coordinator.abort_all_pending(types.FailureReason.CANCELLED)
        self._shutdown.set()
        live = self._live
        if live is not None:
            live.wake()

    def wait_running(self, timeout: float) -> bool:
        """Block until an attempt's subtasks are running (True) or ``timeout`` passes."""
        return self._running.wait(timeout)

    def post_all(self, message: task_messages.ControlMessage) -> None:
        """Send ``message`` to every subtask of the running attempt (``RuntimeError`` if none)."""
        live = self._live
        if live is None:
            raise RuntimeError("no subtasks are running")
        live.post_all(message)

    # -- the restart loop ---------------------------------------------------------------

    def run(self) -> JobResult:
        """Run to completion; raise :class:`JobFailedError` when the restart budget is spent."""
        try:
            return self._run_loop()
        except BaseException:
            self._state = job.JobState.FAILED
            raise
        finally:
            cleanup.discard_unfinished(self.store, self.coordinator, _ENDED)

    def _run_loop(self) -> JobResult:
        number = 0
        while True:
            self._state = job.JobState.RUNNING if number == 0 else job.JobState.RESTARTING
            # Step 1
            chosen_at = self.clock.now()
            restore = restore_mod.restore_point(
                self.store,
                number,
                restore_from=self.restore_from,
                allow_fresh_start=self.allow_fresh_start,
                decided=self.first_restore,
            )
            self.result.restore_point_seconds.append(self.clock.now() - chosen_at)
            self.result.restored_from.append(None if restore is None else restore.checkpoint_id)
            published: dict[types.StepId, int] = (
                {} if restore is None else dict(restore.records_published)
            )
            self.result.records_published = published
            self.result.attempts += 1
            run = self.runner.create(number, restore, self.coordinator.acknowledge, self._decline)
            self.restart_policy.attempt_started(self.clock.now())
            try:
                # Step 2
                if restore is not None:
                    restore_mod.recommit(self.plan.flow, restore, self.faults, number)
                for name, sink in self.plan.flow.transactional_sinks().items():
                    sink.recover(name)
                # Steps 3 and 4
                if self._run_attempt(run, published):
                    if self._abort_reason is not None:
                        raise JobAbortedError(self._abort_reason)
                    stopped = self.result.stopped_with_savepoint is not None
                    self._state = job.JobState.STOPPED if stopped else job.JobState.FINISHED
                    return self.result
            except JobAbortedError:
                raise
            except Exception as exc:
                run.fail(exc)
            finally:
                self._teardown(run)
            if self._abort_reason is not None:
                raise JobAbortedError(self._abort_reason)
            # Step 5
            self._after_failure(run)
            number += 1

    def _after_failure(self, run: attempts.Attempt) -> None:
        failure = run.failure
        report = task_failure.describe(failure) if failure else None
        reason, where = restart.failure_text(report, run.failed_task)
        self.result.failures.append(f"attempt {run.number}{where}: {reason}")
        self.result.failure_times.append(self.clock.now())
        self.result.last_failure = report
        cleanup.discard_unfinished(self.store, self.coordinator, types.FailureReason.TASK_FAILURE)
        detail = report.detail if report else ""
        if detail:
            log.debug("attempt %d failed%s: %s\n%s", run.number, where, reason, detail)
        hopeless = None if report is None else self.same_failure.verdict(report)
        if hopeless is not None:
            raise UnrecoverableJobError(
                f"{reason}{where}; {hopeless}, so restarting cannot heal it: fix the "
                f"{'input or the step' if report and report.step else 'cause'} and start "
                "the job again (it resumes from its latest completed checkpoint)",
                detail,
            ) from failure
        decision = self.restart_policy.attempt_failed(self.clock.now())
        if not decision.restart:
            raise JobFailedError(
                f"{decision.reason}; last failure{where}: {reason}", detail
            ) from failure
        self.result.restarts += 1
        self._state = job.JobState.RESTARTING
        log.info("attempt %d failed%s: %s; restarting", run.number, where, reason)
        if decision.delay > 0:
            time.sleep(decision.delay)

    # -- one attempt --------------------------------------------------------------------

    def _decline(
        self, checkpoint_id: types.CheckpointId, task: metadata.TaskKey, reason: types.FailureReason
    ) -> None:
        message = f"{task} declined checkpoint {checkpoint_id}: {reason.value}"
        self.coordinator.decline(checkpoint_id, task, reason, message)

    def _run_attempt(self, run: attempts.Attempt, published: dict[types.StepId, int]) -> bool:
        """True when the job finished (or was stopped) and its last checkpoint completed."""
        self.coordinator.reset_for_restart(self.plan.task_keys(), published)
        with self._live_lock:
            self._live, started = run, self.clock.now()
        run.start()
        while not run.ready:
            if run.stopping:
                return False
            run.wait(self.tick_interval)
        self.result.startup_seconds.append(self.clock.now() - started)
        self._running.set()
        self._state = job.JobState.RUNNING
        while not run.all_finished and not self._shutdown.is_set():
            if run.stopping:
                return False
            if not self._stop_requested.is_set():
                self.coordinator.tick()
            run.wait(self.tick_interval)
        final = None
        if not self._shutdown.is_set():
            final = self._final_checkpoint(run)
            if final is None:
                return False
        run.shutdown()
        if run.failure is not None:
            return False
        self.result.final_checkpoint = final
        return True

    def _final_checkpoint(self, run: attempts.Attempt) -> int | None:
        while not run.stopping:
            outcome = self.coordinator.trigger_checkpoint()
            if outcome.checkpoint_id is None:
                self.coordinator.tick()
                time.sleep(self.tick_interval)
                continue
            if self._wait_final(run, outcome.checkpoint_id):
                return outcome.checkpoint_id
        return None

    def _wait_final(self, run: attempts.Attempt, checkpoint_id: types.CheckpointId) -> bool:
        """Whether the final checkpoint completed, once its tasks were told (sinks commit it
        before shutting down); a tick at a time, so a task failing meanwhile ends the wait."""
        deadline = time.monotonic() + self.config.timeout
        while True:
            done = self.coordinator.wait_for(checkpoint_id, timeout=self.tick_interval)
            told = checkpoint_id in self.result.completed_checkpoints
            ended = done.is_final and (told or not done.completed)
            if ended or run.stopping or time.monotonic() >= deadline:
                return done.completed

    def _teardown(self, run: attempts.Attempt) -> None:
        self._running.clear()
        run.stop()
        with self._live_lock:
            self._live = None
            self._finished_metrics.add(run.metrics())
        run.close()

    # -- coordinator callbacks ----------------------------------------------------------

    def _checkpoint_failover(self, reason: str) -> None:
        live = self._live
        if live is not None:
            live.fail(RuntimeError(f"too many checkpoint failures: {reason}"))
