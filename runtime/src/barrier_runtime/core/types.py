"""Small value types shared by the barrier protocol, the coordinator and storage."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import NewType

CheckpointId = NewType("CheckpointId", int)
"""Checkpoint ids strictly increase over the whole life of a job, across restarts."""

StepId = NewType("StepId", str)
"""The stable name of a dataflow step; it names the step's persisted state."""

TaskId = NewType("TaskId", str)
"""The name of a task: a chain of steps executed together (named after its head step)."""


class CheckpointKind(enum.Enum):
    """What a snapshot is for."""

    CHECKPOINT = "checkpoint"
    """Periodic, owned by the job, deleted by retention."""
    SAVEPOINT = "savepoint"
    """User-triggered, always aligned, self-contained, never deleted by retention."""


class CheckpointingMode(enum.Enum):
    """The consistency guarantee of the job's snapshots.

    The value is the runtime's spelling (``cjob run --mode``); :attr:`resource_name` is
    the CheckpointedJob's (``spec.checkpointing.mode``, ``job.json``), which the
    constructor accepts too, so the operator and the runtime share this one enum:

    >>> CheckpointingMode("AtLeastOnce") is CheckpointingMode.AT_LEAST_ONCE
    True
    >>> CheckpointingMode.EXACTLY_ONCE.resource_name
    'ExactlyOnce'
    """

    EXACTLY_ONCE = "exactly-once"
    AT_LEAST_ONCE = "at-least-once"

    @property
    def resource_name(self) -> str:
        """The UpperCamelCase spelling of the Kubernetes resource (``ExactlyOnce``)."""
        return "".join(word.title() for word in self.value.split("-"))

    @classmethod
    def _missing_(cls, value: object) -> CheckpointingMode | None:
        return next((m for m in cls if m.resource_name == value), None)


class FailureReason(enum.Enum):
    """Why a checkpoint did not complete. A closed set: every abort names one."""

    TIMEOUT = "timeout"
    SUBSUMED = "subsumed"
    DECLINED = "declined"
    CANCELLED = "cancelled"
    TASK_FAILURE = "task-failure"
    STORAGE_FAILURE = "storage-failure"
    TOO_MANY_PENDING = "too-many-pending"
    MIN_PAUSE = "min-pause"
    JOB_STOPPING = "job-stopping"
    TASKS_NOT_RUNNING = "tasks-not-running"
    CORRUPT_STREAM = "corrupt-stream"


@dataclass(frozen=True, slots=True)
class Barrier:
    """The marker that separates the records of checkpoint *n* from those of *n+1*.

    ``unaligned`` is set when the barrier travels ahead of in-flight data (it
    overtook output buffers); a receiving handler then snapshots at once.
    """

    checkpoint_id: CheckpointId
    timestamp: float
    kind: CheckpointKind = CheckpointKind.CHECKPOINT
    unaligned: bool = False

    @property
    def is_savepoint(self) -> bool:
        return self.kind is CheckpointKind.SAVEPOINT

    def as_unaligned(self) -> Barrier:
        return Barrier(self.checkpoint_id, self.timestamp, self.kind, unaligned=True)


class StateBackendKind(enum.Enum):
    MEMORY = "memory"
    DISK = "disk"


DEFAULT_STATE_MEMORY = 256 << 20


@dataclass(frozen=True, slots=True)
class StateBackend:
    """Where keyed state lives: Python objects in memory (the default), or an embedded
    RocksDB per subtask on local disk with a bounded cache in front
    (:mod:`~barrier_runtime.state.disk_keyed`), for state larger than memory.

    ``memory_bytes``: with ``DISK``, what a subtask's keyed states may keep in memory
    together (decoded values, RocksDB's block cache and memtables).
    """

    kind: StateBackendKind = StateBackendKind.MEMORY
    memory_bytes: int = DEFAULT_STATE_MEMORY

    def executor_env(self) -> dict[str, str]:
        """Environment the workers need: with ``DISK``, two glibc malloc arenas (by default
        up to eight per core, each keeping what its threads, RocksDB's and the upload
        pool's, freed: measured in process, 337 against 284 MiB peak)."""
        return {"MALLOC_ARENA_MAX": "2"} if self.kind is StateBackendKind.DISK else {}

    def __post_init__(self) -> None:
        if self.memory_bytes < 16 << 20:
            raise ValueError(
                f"the state backend's memory must be at least 16 MiB, got {self.memory_bytes} bytes"
            )


@dataclass(frozen=True, slots=True)
class CheckpointConfig:
    """How a job checkpoints. Durations are in seconds.

    ``aligned_timeout`` only matters with ``unaligned``: 0 means "always
    unaligned", a positive value means "start aligned, switch to unaligned
    when alignment has taken longer than this" (savepoints stay aligned).
    """

    interval: float = 1.0
    timeout: float = 60.0
    min_pause: float = 0.0
    max_concurrent: int = 1
    tolerable_failures: int = 3
    mode: CheckpointingMode = CheckpointingMode.EXACTLY_ONCE
    unaligned: bool = False
    aligned_timeout: float = 0.0
    retained: int = 3
    incremental: bool = False
    """Checkpoints upload only the keyed state that changed since the previous one."""
    local_recovery: bool = False
    """With ``incremental``: workers keep local copies of what they upload and a restore on
    the same host reads them first (:mod:`~barrier_runtime.storage.local_copies`)."""
    state_backend: StateBackend = field(default_factory=StateBackend)
    """Where keyed state lives between checkpoints: in memory, or on local disk."""

    def __post_init__(self) -> None:
        if self.interval <= 0:
            raise ValueError(f"checkpoint interval must be positive, got {self.interval}")
        if self.timeout <= 0:
            raise ValueError(f"checkpoint timeout must be positive, got {self.timeout}")
        if self.min_pause < 0:
            raise ValueError(f"min_pause must not be negative, got {self.min_pause}")
        if self.max_concurrent < 1:
            raise ValueError(f"max_concurrent must be at least 1, got {self.max_concurrent}")
        if self.tolerable_failures < 0:
            raise ValueError("tolerable_failures must not be negative")
        if self.aligned_timeout < 0:
            raise ValueError("aligned_timeout must not be negative")
        if self.retained < 1:
            raise ValueError(f"retained must be at least 1, got {self.retained}")
        if self.unaligned and self.mode is CheckpointingMode.AT_LEAST_ONCE:
            raise ValueError("unaligned checkpoints need mode exactly-once")
