"""The seam between the driver's restart loop and whatever hosts an attempt's subtasks.

An :class:`Attempt` is one execution of the job from one restore point: the
in-process executor hosts its subtasks on threads, the Spark driver on the
workers of one barrier stage. The :class:`~.job_driver.JobDriver` drives it:

1. ``start()`` launches the subtasks (it may return before they run);
2. the driver waits until ``ready`` (every subtask running), ticking nothing;
3. it then ticks the coordinator, sleeping in ``wait(timeout)``, until
   ``all_finished`` or ``stopping``; messages reach the subtasks through
   ``post_all`` (which raises ``RuntimeError`` when they cannot be reached);
4. on success it calls ``shutdown()`` (subtasks leave after everything queued
   before, and it returns once they have), then ``stop()`` and ``close()``;
   on failure only ``stop()`` and ``close()``.

``fail`` records the first failure (and which subtask) and stops the attempt;
every later failure is ignored. Implementations are thread-safe: coordinator
callbacks, the control API and the driver loop call them concurrently.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from barrier_runtime.core import metadata, task_messages, task_metrics, types

Acknowledge = Callable[[metadata.TaskAcknowledgement], object]
Decline = Callable[[types.CheckpointId, metadata.TaskKey, types.FailureReason], None]


class Attempt(Protocol):
    @property
    def number(self) -> int:
        """0 for the first attempt of this driver, then 1, 2, …"""
        ...

    @property
    def ready(self) -> bool:
        """Every subtask is running."""
        ...

    @property
    def stopping(self) -> bool: ...

    @property
    def all_finished(self) -> bool:
        """Every subtask reached the end of its input."""
        ...

    @property
    def failure(self) -> BaseException | None: ...

    @property
    def failed_task(self) -> metadata.TaskKey | None: ...

    def start(self) -> None: ...

    def wait(self, timeout: float) -> None:
        """Sleep up to ``timeout`` seconds, waking early when anything changed."""
        ...

    def wake(self) -> None:
        """Wake a :meth:`wait`."""
        ...

    def post_all(self, message: task_messages.ControlMessage) -> None: ...

    def fail(self, exc: BaseException, task: metadata.TaskKey | None = None) -> None: ...

    def shutdown(self) -> None: ...

    def stop(self) -> None: ...

    def close(self) -> None: ...

    def metrics(self) -> task_metrics.AttemptMetrics: ...


class AttemptRunner(Protocol):
    def create(
        self,
        number: int,
        restore_point: metadata.CheckpointMetadata | None,
        acknowledge: Acknowledge,
        decline: Decline,
    ) -> Attempt:
        """A new, not yet started attempt restoring ``restore_point`` (``None``: empty state)."""
        ...
