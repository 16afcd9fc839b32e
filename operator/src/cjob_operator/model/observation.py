"""What one reconcile saw: the CR, the driver pod, the control API, the checkpoint store.

Built by :mod:`cjob_operator.observe` (which does the I/O) and consumed by the pure
:func:`cjob_operator.decide.decide`. ``None`` for a view means "not looked at";
a view with ``reachable``/``readable`` false means "looked and could not see".
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from barrier_runtime.core import types
from cjob_operator.model import enums, spec, status


@dataclass(frozen=True, slots=True)
class DriverView:
    state: enums.DriverState
    pod_name: str | None = None
    deployment_id: str | None = None
    started_at: float | None = None
    message: str | None = None
    exit_code: int | None = None

    @classmethod
    def absent(cls) -> DriverView:
        return cls(enums.DriverState.ABSENT)


@dataclass(frozen=True, slots=True)
class CheckpointInfo:
    """A completed checkpoint or savepoint, from the control API or the store."""

    id: int
    kind: types.CheckpointKind = types.CheckpointKind.CHECKPOINT
    path: str | None = None
    time: float | None = None
    duration_seconds: float | None = None
    size_bytes: int | None = None
    trigger: str | None = None
    uploaded_bytes: int | None = None
    """Bytes written for it: ``size_bytes`` unless incremental checkpoints reused objects."""


@dataclass(frozen=True, slots=True)
class FailedInfo:
    id: int | None
    reason: str
    time: float | None = None


class EntryStatus(enum.Enum):
    IN_PROGRESS = "in-progress"
    COMPLETED = "completed"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One checkpoint or savepoint of the driver's history (``GET /v1/checkpoints``)."""

    id: int
    status: EntryStatus
    kind: types.CheckpointKind = types.CheckpointKind.CHECKPOINT
    path: str | None = None
    trigger_time: float | None = None
    completion_time: float | None = None
    failure_reason: str | None = None


@dataclass(frozen=True, slots=True)
class ControlView:
    """The driver's control API (``GET /readyz``, ``/v1/job``, ``/v1/checkpoints``)."""

    reachable: bool
    ready: bool = False
    job_state: str | None = None
    in_progress: int = 0
    last_trigger_time: float | None = None
    latest_completed: CheckpointInfo | None = None
    latest_failed: FailedInfo | None = None
    consecutive_failures: int = 0
    failure_times: tuple[float, ...] = ()
    """When the driver's attempts failed and it restarted the job itself (``/v1/job``)."""
    last_failure: str | None = None
    """The driver's last attempt failure."""
    error: str | None = None
    history: tuple[HistoryEntry, ...] = ()
    """The driver's recent checkpoints and savepoints (bounded by the driver)."""

    @classmethod
    def unreachable(cls, error: str) -> ControlView:
        return cls(reachable=False, error=error)

    def entry(self, cid: int) -> HistoryEntry | None:
        """What the driver knows of checkpoint or savepoint ``cid`` (``None``: nothing)."""
        found = next((e for e in self.history if e.id == cid), None)
        if found is not None:
            return found
        done = self.latest_completed
        if done is not None and done.id == cid:
            return HistoryEntry(
                cid, EntryStatus.COMPLETED, done.kind, done.path, completion_time=done.time
            )
        failed = self.latest_failed
        if failed is not None and failed.id == cid:
            return HistoryEntry(cid, EntryStatus.FAILED, failure_reason=failed.reason)
        return None


@dataclass(frozen=True, slots=True)
class Unusable:
    id: int
    kind: types.CheckpointKind
    reason: str


@dataclass(frozen=True, slots=True)
class StoreView:
    """The checkpoint store (the source of truth after restarts)."""

    readable: bool
    latest_checkpoint: CheckpointInfo | None = None
    latest_savepoint: CheckpointInfo | None = None
    unusable: tuple[Unusable, ...] = ()
    error: str | None = None
    shared_bytes: int | None = None
    """Bytes of the incremental checkpoints' ``shared/`` objects the completed ones reference."""

    @classmethod
    def unreadable(cls, error: str) -> StoreView:
        return cls(readable=False, error=error)

    @classmethod
    def empty(cls) -> StoreView:
        return cls(readable=True)

    @property
    def newest_usable(self) -> CheckpointInfo | None:
        """The newest of the latest usable checkpoint and savepoint (ids share one sequence)."""
        candidates = [c for c in (self.latest_checkpoint, self.latest_savepoint) if c]
        return max(candidates, key=lambda c: c.id) if candidates else None

    @property
    def only_unusable(self) -> bool:
        """Snapshots exist but none can be restored: starting empty would lose state."""
        return self.newest_usable is None and bool(self.unusable)


@dataclass(frozen=True, slots=True)
class Observation:
    namespace: str
    name: str
    uid: str
    generation: int
    deleting: bool
    spec: spec.JobSpec | None
    spec_error: str | None
    status: status.JobStatus
    driver: DriverView
    control: ControlView | None
    store: StoreView | None
    now: float
    jitter: float = 0.5
    """A uniform sample in [0, 1) for backoff jitter (injected so ``decide`` stays pure)."""
