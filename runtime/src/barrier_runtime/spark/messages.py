"""What the driver's coordinator and the workers say to each other.

Worker → driver, in the order a healthy worker sends them:
``Hello`` (first frame, with the address its peers reach it at), ``Running``
(its subtasks started), then any number of ``Ack``, ``Decline``,
``TaskFinished`` and ``Metrics``; finally ``Bye`` (after a ``Shutdown``) or
``Failed``.

Driver → worker: ``Peers`` first (every worker's address, once all P said
``Hello``: see :mod:`~barrier_runtime.spark.peer_registry`), then ``Post``,
which wraps the control messages the subtasks already understand (trigger,
complete, abort, shutdown). The driver aborts a worker by closing its
connection; a worker that loses the driver stops at once.

They travel in :mod:`~barrier_runtime.spark.wire` frames, encoded by
:mod:`~barrier_runtime.spark.message_codec` (a message class added here must
be registered there, with every type its fields carry).
"""

from __future__ import annotations

from dataclasses import dataclass

from barrier_runtime import task_failure
from barrier_runtime.core import metadata, task_messages, task_metrics, types


@dataclass(frozen=True, slots=True)
class Hello:
    attempt: int
    worker: int
    pid: int
    host: str
    peer_address: str
    """``host:port`` where this worker's peers connect to it (already listening)."""


@dataclass(frozen=True, slots=True)
class Peers:
    """Every worker's peer address, by index: the attempt's rendezvous is complete."""

    attempt: int
    addresses: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Running:
    """Every subtask of the worker's slice has been started."""

    startup: tuple[tuple[str, float], ...] = ()
    """When the worker reached each start-up phase (wall-clock seconds), in order."""


@dataclass(frozen=True, slots=True)
class Ack:
    ack: metadata.TaskAcknowledgement


@dataclass(frozen=True, slots=True)
class Decline:
    checkpoint_id: types.CheckpointId
    task: metadata.TaskKey
    reason: types.FailureReason


@dataclass(frozen=True, slots=True)
class TaskFinished:
    task: metadata.TaskKey


@dataclass(frozen=True, slots=True)
class Metrics:
    """The worker's counters in this attempt so far (cumulative, replaces earlier ones)."""

    metrics: task_metrics.AttemptMetrics


@dataclass(frozen=True, slots=True)
class Failed:
    task: metadata.TaskKey | None
    error: str
    """``"ExceptionType: message"``."""
    secondary: bool = False
    """The failure is a consequence of another one (a peer's channel closed)."""
    report: task_failure.TaskFailure | None = None
    """Its class (may a restart heal it?), fingerprint, user step and traceback."""


@dataclass(frozen=True, slots=True)
class Bye:
    metrics: task_metrics.AttemptMetrics


@dataclass(frozen=True, slots=True)
class Post:
    message: task_messages.ControlMessage


ToDriver = Hello | Running | Ack | Decline | TaskFinished | Metrics | Failed | Bye
