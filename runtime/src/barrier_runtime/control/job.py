"""What the driver's control API needs from a running job (the seam the executors implement)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from barrier_runtime.checkpoint import outcomes, stats
from barrier_runtime.core import latency, types


class JobState(enum.Enum):
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    RESTARTING = "RESTARTING"
    STOPPING = "STOPPING"
    STOPPED = "STOPPED"
    FINISHED = "FINISHED"
    FAILED = "FAILED"


@dataclass(frozen=True, slots=True)
class JobInfo:
    name: str
    state: JobState
    attempt: int
    restarts: int
    parallelism: int
    max_parallelism: int
    start_time: float
    ready: bool
    """Every subtask of the current attempt is running."""
    restored_from: int | None = None
    failure: str | None = None
    failure_detail: str | None = None
    """The last failure's traceback (of the user's code, for an error in a step)."""
    failure_times: tuple[float, ...] = ()
    """When each failed attempt of this driver failed (epoch seconds)."""
    startup_seconds: float | None = None
    """The latest attempt that got running: seconds from its start to every subtask running
    with its state restored."""


@dataclass(frozen=True, slots=True)
class RuntimeMetrics:
    """Cumulative counters over all attempts."""

    records_in: Mapping[str, int] = field(default_factory=dict)
    records_out: Mapping[str, int] = field(default_factory=dict)
    backpressure_seconds: Mapping[str, float] = field(default_factory=dict)
    """Per task: time spent waiting for downstream capacity."""
    records_rejected: Mapping[str, int] = field(default_factory=dict)
    """Per step or source with ``on_error`` skip or dead-letter: records passed over."""
    arrival_latency: Mapping[str, latency.LatencyHistogram] = field(default_factory=dict)
    """Per sink step: write time - creation time of records stamped with their creation."""
    commit_latency: Mapping[str, latency.LatencyHistogram] = field(default_factory=dict)
    """Per sink step: checkpoint commit time - creation time of stamped records."""
    watermarks: Mapping[str, int] = field(default_factory=dict)
    """Per step of the running attempt: the smallest watermark (ms) its subtasks forwarded."""
    late_dropped: Mapping[str, int] = field(default_factory=dict)
    """Per window or join step: late records dropped."""
    source_lag: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Per source step and partition of the running attempt: records behind the end."""


class SavepointFailedError(RuntimeError):
    """A stop-with-savepoint could not take its savepoint; the job keeps running."""


class JobView(Protocol):
    """What a job shows (its metrics read only this)."""

    def info(self) -> JobInfo: ...

    def checkpoint_stats(self) -> stats.CheckpointStats: ...

    def runtime_metrics(self) -> RuntimeMetrics: ...


class JobControl(JobView, Protocol):
    """What a job shows and what may be asked of it (the control API's seam)."""

    def trigger_checkpoint(self, kind: types.CheckpointKind) -> outcomes.TriggerOutcome: ...

    def stop_with_savepoint(self, timeout: float) -> outcomes.CheckpointOutcome:
        """Take a savepoint, then stop; raise :class:`SavepointFailedError` if it fails."""
        ...
