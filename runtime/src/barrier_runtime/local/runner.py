"""Attempts hosted in this process: every subtask on its own thread, channels in memory.

:class:`LocalAttemptRunner` is the in-process
:class:`~barrier_runtime.driver.attempts.AttemptRunner`; its
:class:`LocalAttempt` wraps an
:class:`~barrier_runtime.task.attempt.AttemptContext` (the services the
subtasks share) and the subtask threads. It is ready once every subtask has
restored its state (as a Spark worker reports itself running only then).
"""

from __future__ import annotations

import threading

from barrier_runtime.core import faults, metadata, task_messages, task_metrics, types
from barrier_runtime.core.clock import Clock
from barrier_runtime.driver import attempts
from barrier_runtime.graph import plan as plan_mod
from barrier_runtime.storage import checkpoint_store
from barrier_runtime.task import attempt as attempt_mod
from barrier_runtime.task import metrics as subtask_counters
from barrier_runtime.task import subtask as subtask_mod

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
        with self._lock:
            subtasks = list(self._subtasks)
        return self._ready and all(s.restored.is_set() for s in subtasks)

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

    def post_all(self, message: task_messages.ControlMessage) -> None:
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
            s.post(task_messages.Shutdown())
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

    def metrics(self) -> task_metrics.AttemptMetrics:
        with self._lock:
            subtasks = list(self._subtasks)
        return subtask_counters.subtask_metrics(subtasks)


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
