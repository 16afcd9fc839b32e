"""Attempts hosted in this process: every subtask on its own thread, channels in memory.

:class:`LocalAttemptRunner` is the in-process
:class:`~barrier_runtime.driver.attempts.AttemptRunner`; its
:class:`LocalAttempt` wraps an
:class:`~barrier_runtime.local.attempt.AttemptContext` (the services the
subtasks share) and the subtask threads. It is ready as soon as the threads
are started.
"""

from __future__ import annotations

import threading

from barrier_runtime.checkpoint import metadata, types
from barrier_runtime.clock import Clock
from barrier_runtime.driver import attempts
from barrier_runtime.graph import plan as plan_mod
from barrier_runtime.local import attempt as attempt_mod
from barrier_runtime.local import control, faults
from barrier_runtime.local import subtask as subtask_mod
from barrier_runtime.storage import checkpoint_store

_JOIN_TIMEOUT = 30.0


class LocalAttempt:
    """One attempt on threads of this process; see :class:`~.attempts.Attempt`."""

    def __init__(self, ctx: attempt_mod.AttemptContext, channel_capacity: int) -> None:
        self.ctx = ctx
        self._capacity = channel_capacity
        self._lock = threading.Lock()
        self._subtasks: list[subtask_mod.Subtask] = []
        self._threads: list[threading.Thread] = []
        self._ready = False

    @property
    def number(self) -> int:
        return self.ctx.attempt

    @property
    def ready(self) -> bool:
        return self._ready

    @property
    def stopping(self) -> bool:
        return self.ctx.stopping.is_set()

    @property
    def all_finished(self) -> bool:
        return self.ctx.all_finished.is_set()

    @property
    def failure(self) -> BaseException | None:
        return self.ctx.failure

    @property
    def failed_task(self) -> metadata.TaskKey | None:
        return self.ctx.failed_task

    def start(self) -> None:
        subtasks = attempt_mod.build_subtasks(self.ctx, self._capacity)
        with self._lock:
            self._subtasks = subtasks
        self._threads = [
            threading.Thread(target=s.run, name=f"{s.key}-a{self.number}", daemon=True)
            for s in subtasks
        ]
        for t in self._threads:
            t.start()
        self._ready = True

    def wait(self, timeout: float) -> None:
        with self.ctx.changed:
            self.ctx.changed.wait(timeout)

    def wake(self) -> None:
        with self.ctx.changed:
            self.ctx.changed.notify_all()

    def post_all(self, message: control.ControlMessage) -> None:
        with self._lock:
            subtasks = list(self._subtasks)
        if not subtasks:
            raise RuntimeError("no subtasks are running")
        for s in subtasks:
            s.post(message)

    def fail(self, exc: BaseException, task: metadata.TaskKey | None = None) -> None:
        self.ctx.fail(exc, task)

    def shutdown(self) -> None:
        for s in self._subtasks:
            s.post(control.Shutdown())
        for t in self._threads:
            t.join()

    def stop(self) -> None:
        self.ctx.stop()
        for t in self._threads:
            t.join(timeout=_JOIN_TIMEOUT)

    def close(self) -> None:
        self.ctx.close()
        with self._lock:
            self._subtasks = []

    def metrics(self) -> attempts.AttemptMetrics:
        with self._lock:
            subtasks = list(self._subtasks)
        return subtask_metrics(subtasks)


def subtask_metrics(subtasks: list[subtask_mod.Subtask]) -> attempts.AttemptMetrics:
    """The counters of ``subtasks``, summed per step and per task."""
    out = attempts.AttemptMetrics()
    for s in subtasks:
        for step, n in list(s.records_in.items()):
            out.records_in[step] = out.records_in.get(step, 0) + n
        for step, n in list(s.records_out.items()):
            out.records_out[step] = out.records_out.get(step, 0) + n
        for step, rejects in list(s.rejects.items()):
            out.records_rejected[step] = out.records_rejected.get(step, 0) + rejects.count
        task = s.task.task_id
        out.backpressure_seconds[task] = (
            out.backpressure_seconds.get(task, 0.0) + s.backpressure_seconds
        )
    return out


class LocalAttemptRunner:
    """Creates :class:`LocalAttempt` objects for a :class:`~.job_driver.JobDriver`."""

    def __init__(
        self,
        plan: plan_mod.ExecutionPlan,
        *,
        config: types.CheckpointConfig,
        clock: Clock,
        store: checkpoint_store.CheckpointStore,
        fault_injector: faults.FaultInjector,
        channel_capacity: int,
    ) -> None:
        self.plan = plan
        self.config = config
        self.clock = clock
        self.store = store
        self.faults = fault_injector
        self.channel_capacity = channel_capacity

    def create(
        self,
        number: int,
        restore_point: metadata.CheckpointMetadata | None,
        acknowledge: attempts.Acknowledge,
        decline: attempts.Decline,
    ) -> LocalAttempt:
        ctx = attempt_mod.AttemptContext(
            plan=self.plan,
            config=self.config,
            clock=self.clock,
            store=self.store,
            fault_injector=self.faults,
            attempt=number,
            restore_point=restore_point,
            acknowledge=acknowledge,
            decline=decline,
        )
        return LocalAttempt(ctx, self.channel_capacity)
