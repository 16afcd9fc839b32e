"""Test doubles for the coordinator's seams: they record what happened and can be told to fail.

- :class:`RecordingGateway` records every barrier, completion and abort it is
  given, and can fail triggers or react to them (e.g. acknowledge at once).
- :class:`FakeMetadataStore` keeps committed metadata in memory, refuses a
  second commit of the same id like the real conditional put, can fail the
  next commits or retention, and can hold commits until released so tests can
  act while a commit is in flight.
- :class:`CoordinatorHarness` wires a coordinator to a manual clock and both
  doubles, with helpers to acknowledge for every task.

>>> harness = CoordinatorHarness.create(tasks=2)
>>> outcome = harness.coordinator.trigger_checkpoint()
>>> harness.ack_all(outcome.checkpoint_id)
>>> harness.gateway.completed_ids, harness.store.retention_calls
([1], [3])
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from barrier_runtime.checkpoint import coordinator, pending
from barrier_runtime.core import clock as clock_module
from barrier_runtime.core import metadata, types
from barrier_runtime.storage import errors


class RecordingGateway:
    """A :class:`~barrier_runtime.checkpoint.protocols.TaskGateway` that records messages."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.barriers: list[types.Barrier] = []
        self.completed: list[metadata.CheckpointMetadata] = []
        self.aborted: list[tuple[types.CheckpointId, types.FailureReason]] = []
        self.trigger_error: Exception | None = None
        """When set, every trigger raises it (after recording the barrier)."""
        self.on_trigger: Callable[[types.Barrier], None] | None = None
        """Called with every delivered barrier, e.g. to acknowledge synchronously."""

    def trigger(self, barrier: types.Barrier) -> None:
        with self._lock:
            self.barriers.append(barrier)
            error, hook = self.trigger_error, self.on_trigger
        if error is not None:
            raise error
        if hook is not None:
            hook(barrier)

    def notify_complete(self, metadata: metadata.CheckpointMetadata) -> None:
        with self._lock:
            self.completed.append(metadata)

    def notify_aborted(
        self, checkpoint_id: types.CheckpointId, reason: types.FailureReason
    ) -> None:
        with self._lock:
            self.aborted.append((checkpoint_id, reason))

    @property
    def triggered_ids(self) -> list[types.CheckpointId]:
        with self._lock:
            return [b.checkpoint_id for b in self.barriers]

    @property
    def completed_ids(self) -> list[types.CheckpointId]:
        with self._lock:
            return [m.checkpoint_id for m in self.completed]

    @property
    def aborted_ids(self) -> list[types.CheckpointId]:
        with self._lock:
            return [checkpoint_id for checkpoint_id, _ in self.aborted]

    def abort_reason(self, checkpoint_id: types.CheckpointId) -> types.FailureReason | None:
        with self._lock:
            return next((r for i, r in self.aborted if i == checkpoint_id), None)


class FakeMetadataStore:
    """An in-memory :class:`~barrier_runtime.checkpoint.protocols.MetadataStore`."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.committed: dict[types.CheckpointId, metadata.CheckpointMetadata] = {}
        self.commit_attempts: list[types.CheckpointId] = []
        self.retention_calls: list[int] = []
        self._commit_failures: list[Exception] = []
        self.retention_error: Exception | None = None
        self._held = False
        self._in_commit = 0

    def fail_next_commits(self, *failures: Exception) -> None:
        """The next ``len(failures)`` commits raise these, in order."""
        with self._changed:
            self._commit_failures.extend(failures)

    def hold_commits(self) -> None:
        """Make commits block until :meth:`release_commits`."""
        with self._changed:
            self._held = True

    def release_commits(self) -> None:
        with self._changed:
            self._held = False
            self._changed.notify_all()

    def wait_until_committing(self, count: int = 1, timeout: float = 5.0) -> bool:
        """Wait until ``count`` commits are blocked in :meth:`commit`; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: self._in_commit >= count, timeout)

    def commit(self, metadata: metadata.CheckpointMetadata) -> str:
        with self._changed:
            self.commit_attempts.append(metadata.checkpoint_id)
            self._in_commit += 1
            self._changed.notify_all()
            try:
                self._changed.wait_for(lambda: not self._held, timeout=30.0)
                if self._commit_failures:
                    raise self._commit_failures.pop(0)
                if metadata.checkpoint_id in self.committed:
                    raise errors.CheckpointAlreadyExistsError(
                        f"_metadata of checkpoint {metadata.checkpoint_id} already exists"
                    )
                self.committed[metadata.checkpoint_id] = metadata
            finally:
                self._in_commit -= 1
        prefix = "sp" if metadata.kind is types.CheckpointKind.SAVEPOINT else "chk"
        return f"checkpoints/{prefix}-{metadata.checkpoint_id:010d}"

    def apply_retention(self, retained: int) -> None:
        with self._changed:
            self.retention_calls.append(retained)
            if self.retention_error is not None:
                raise self.retention_error


def task_keys(count: int, task_id: str = "map") -> list[metadata.TaskKey]:
    """``count`` subtasks of one task: ``map#0 … map#{count-1}``."""
    return [metadata.TaskKey(types.TaskId(task_id), i) for i in range(count)]


def acknowledgement(
    checkpoint_id: types.CheckpointId, task: metadata.TaskKey, size: int = 10
) -> metadata.TaskAcknowledgement:
    """An acknowledgement with one keyed state handle of ``size`` bytes."""
    handle = metadata.StateHandle(
        step_id=types.StepId(str(task.task_id)),
        subtask=task.subtask,
        key=f"chk-{checkpoint_id}/{task.task_id}/{task.subtask}.arrow",
        size=size,
        sha256="0" * 64,
    )
    return metadata.TaskAcknowledgement(checkpoint_id, task, state_handles=(handle,))


@dataclass
class CoordinatorHarness:
    """A coordinator wired to a manual clock, a recording gateway and a fake store."""

    coordinator: coordinator.CheckpointCoordinator
    clock: clock_module.ManualClock
    gateway: RecordingGateway
    store: FakeMetadataStore
    tasks: list[metadata.TaskKey]
    failovers: list[str] = field(default_factory=list)

    @classmethod
    def create(
        cls,
        config: types.CheckpointConfig | None = None,
        *,
        tasks: int | Iterable[metadata.TaskKey] = 2,
        first_checkpoint_id: int = 1,
        start: float = 1000.0,
        commit_settle_timeout: float = 5.0,
        gateway: RecordingGateway | None = None,
        on_failover: Callable[[str], None] | None = None,
    ) -> CoordinatorHarness:
        """Wire a coordinator; failover requests land in ``failovers`` unless ``on_failover``."""
        task_list = task_keys(tasks) if isinstance(tasks, int) else list(tasks)
        clock = clock_module.ManualClock(start)
        gateway = gateway or RecordingGateway()
        store = FakeMetadataStore()
        failovers: list[str] = []
        coord = coordinator.CheckpointCoordinator(
            config or types.CheckpointConfig(),
            clock=clock,
            gateway=gateway,
            store=store,
            tasks=task_list,
            fingerprint=metadata.JobFingerprint((types.StepId("map"),), 128, len(task_list)),
            first_checkpoint_id=first_checkpoint_id,
            on_failover=on_failover or failovers.append,
            commit_settle_timeout=commit_settle_timeout,
        )
        return cls(coord, clock, gateway, store, task_list, failovers)

    def ack(
        self, checkpoint_id: types.CheckpointId | int | None, task: metadata.TaskKey
    ) -> pending.AckResult:
        if checkpoint_id is None:
            raise ValueError("no checkpoint id (was the trigger rejected?)")
        return self.coordinator.acknowledge(
            acknowledgement(types.CheckpointId(checkpoint_id), task)
        )

    def ack_all(
        self,
        checkpoint_id: types.CheckpointId | int | None,
        tasks: Iterable[metadata.TaskKey] | None = None,
    ) -> None:
        """Acknowledge for every task (or those given); each must be accepted."""
        for task in self.tasks if tasks is None else tasks:
            result = self.ack(checkpoint_id, task)
            if result is not pending.AckResult.SUCCESS:
                raise AssertionError(f"ack of {checkpoint_id} by {task} answered {result}")
