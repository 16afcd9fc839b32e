"""What a worker is told when it is launched: plain values in the Spark task closure.

The config travels as bytes of :mod:`~barrier_runtime.spark.message_codec`
(data-only, never pickle); every class it holds is registered there.

Secrets: the closure carries the attempt's random secret (from which the
control-plane MAC key and the data-plane token are derived) and never any
storage credential. Workers read credentials from their own environment,
under the variable *names* in :class:`StoreRef` (in local mode executors
inherit the driver's environment; on Kubernetes the executor pod template
maps them from the storage Secret).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from barrier_runtime.core import faults, metadata, types
from barrier_runtime.spark import pipeline
from barrier_runtime.storage import checkpoint_store, object_store

ACCESS_KEY_ENV = "AWS_ACCESS_KEY_ID"
SECRET_KEY_ENV = "AWS_SECRET_ACCESS_KEY"


@dataclass(frozen=True, slots=True)
class StoreRef:
    """Where the job's checkpoints live, and which environment variables hold credentials."""

    url: str
    job_path: str
    access_key_env: str = ACCESS_KEY_ENV
    secret_key_env: str = SECRET_KEY_ENV

    def open(
        self, *, create_bucket: bool = False, timeouts: object_store.Timeouts | None = None
    ) -> checkpoint_store.CheckpointStore:
        store = object_store.open_object_store(
            self.url,
            access_key=os.environ.get(self.access_key_env) or None,
            secret_key=os.environ.get(self.secret_key_env) or None,
            create_bucket=create_bucket,
            timeouts=timeouts,
        )
        return checkpoint_store.CheckpointStore(store, self.job_path)


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """Everything worker *i* of one attempt needs besides its index."""

    attempt: int
    secret: bytes
    driver_address: str
    """``host:port`` of the driver's coordinator server."""
    pipeline: pipeline.PipelineRef
    parallelism: int
    fingerprint: metadata.JobFingerprint
    checkpoint: types.CheckpointConfig
    store: StoreRef
    restore_point: metadata.CheckpointMetadata | None
    channel_capacity: int = 8
    host: str | None = None
    """Address to listen on and advertise to peers (default: see ``worker.listen_host``)."""
    crashes: tuple[faults.Crash, ...] = ()
    """Crash plan for tests: injected at life-cycle points inside the workers."""
    metrics_interval: float = 0.5
    connect_timeout: float = 60.0
