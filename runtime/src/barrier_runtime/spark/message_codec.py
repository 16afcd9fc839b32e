"""The typed, data-only codec of driver <-> worker frames and of the worker's launch config.

Control frames (:mod:`~barrier_runtime.spark.messages`) and the
:class:`~barrier_runtime.spark.config.WorkerConfig` in the Spark task
closure are encoded with the value codec (:mod:`~barrier_runtime.core.values`)
under a registry of their own: every message dataclass, and every runtime
type a message carries (acknowledgements with state handles, checkpoint
metadata, barriers, failure reports, attempt metrics), is registered under
its class name. Decoding constructs only those classes, from decoded plain
fields; nothing can make the receiver import a module or call anything else,
even with the attempt's MAC key. Both ends run the same release, so class
names are the stable names.

>>> from barrier_runtime.core import metadata
>>> hello = messages.Hello(1, worker=0, pid=42, host="127.0.0.1", peer_address="127.0.0.1:4000")
>>> decode(encode(hello)) == hello
True
>>> decode(encode(messages.Running()))
Running(startup=())
"""

from __future__ import annotations

from typing import Any

from barrier_runtime import task_failure
from barrier_runtime.core import (
    faults,
    latency,
    metadata,
    task_messages,
    task_metrics,
    types,
    values,
)
from barrier_runtime.spark import config, messages, pipeline

REGISTRY = values.Registry()
"""The classes control frames and worker configs may contain (by class name)."""

MESSAGE_TYPES: tuple[type, ...] = (
    messages.Hello,
    messages.Peers,
    messages.Running,
    messages.Ack,
    messages.Decline,
    messages.TaskFinished,
    messages.Metrics,
    messages.Failed,
    messages.Bye,
    messages.Post,
)
_CARRIED: tuple[type, ...] = (
    task_messages.TriggerCheckpoint,
    task_messages.CheckpointCompleted,
    task_messages.CheckpointAborted,
    task_messages.Shutdown,
    metadata.TaskKey,
    metadata.StateHandle,
    metadata.HandleKind,
    metadata.AckMetrics,
    metadata.TaskAcknowledgement,
    metadata.JobFingerprint,
    metadata.CheckpointMetadata,
    types.Barrier,
    types.CheckpointKind,
    types.CheckpointingMode,
    types.FailureReason,
    types.CheckpointConfig,
    types.StateBackend,
    types.StateBackendKind,
    task_failure.TaskFailure,
    task_failure.FailureClass,
    task_metrics.AttemptMetrics,
    latency.LatencyHistogram,
    config.WorkerConfig,
    config.StoreRef,
    pipeline.PipelineRef,
    faults.Crash,
    faults.FaultPoint,
)
for _cls in (*MESSAGE_TYPES, *_CARRIED):
    REGISTRY.register(_cls, name=_cls.__name__)


class UnexpectedMessageError(values.ValueDecodeError):
    """A frame decoded to something that is not what this end expects."""


def encode(value: Any) -> bytes:
    """The bytes of a message (or any plain value) for a control frame."""
    return values.encode(value, REGISTRY)


def decode(data: bytes | memoryview) -> Any:
    """The message in a control frame (:class:`~barrier_runtime.core.values.ValueDecodeError`)."""
    return values.decode(data, REGISTRY)


def encode_config(cfg: config.WorkerConfig) -> bytes:
    """The worker config as it travels in the Spark task closure."""
    return encode(cfg)


def decode_config(data: bytes) -> config.WorkerConfig:
    cfg = decode(data)
    if not isinstance(cfg, config.WorkerConfig):
        raise UnexpectedMessageError(f"expected a WorkerConfig, got {type(cfg).__name__}")
    return cfg
