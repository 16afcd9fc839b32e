"""Checkpoint storage: object stores (local directory, S3) and the checkpoint layout on them.

What belongs here: everything that touches bytes at rest — the
:class:`ObjectStore` seam and its URL opener (``object_store``), what its
adapters share (``objects``: keys, :class:`ObjectInfo`), the adapters
(:class:`LocalObjectStore`, :class:`S3ObjectStore` on the ``minio`` SDK), the
:class:`CheckpointStore` that writes, commits, verifies, restores and retains checkpoints in the
layout of docs/architecture.md, 'Checkpoint storage', the named storage errors, and
:class:`EmbeddedS3Server` (a real SeaweedFS S3 server for tests and laptops) on
``s3_server.LocalS3Server``, what every S3 server started as a child process shares
(the tests start MinIO on it too).
Nothing here knows about barriers, operators or Spark.

:class:`S3ObjectStore`, :class:`EmbeddedS3Server` and :func:`find_weed_binary`
load on first use: they import the ``minio`` SDK (about a fifth of a Spark
worker's import time), which a job on a local directory never needs.
"""

import importlib
from typing import TYPE_CHECKING

from barrier_runtime.core.layout import CheckpointRef, Inventory, RejectedCheckpoint
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.errors import (
    BucketNotFoundError,
    CheckpointAlreadyExistsError,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    EmbeddedServerError,
    InvalidStoreUrlError,
    NoUsableCheckpointError,
    ObjectNotFoundError,
    StorageAccessDeniedError,
    StorageError,
    StorageUnavailableError,
)
from barrier_runtime.storage.local import LocalObjectStore
from barrier_runtime.storage.object_store import ObjectInfo, ObjectStore, open_object_store

if TYPE_CHECKING:
    from barrier_runtime.storage.embedded import EmbeddedS3Server, find_weed_binary
    from barrier_runtime.storage.s3 import S3ObjectStore

_LAZY = {"EmbeddedS3Server": "embedded", "find_weed_binary": "embedded", "S3ObjectStore": "s3"}

__all__ = [
    "BucketNotFoundError",
    "CheckpointAlreadyExistsError",
    "CheckpointNotFoundError",
    "CheckpointRef",
    "CheckpointStore",
    "CorruptCheckpointError",
    "EmbeddedS3Server",
    "EmbeddedServerError",
    "InvalidStoreUrlError",
    "Inventory",
    "LocalObjectStore",
    "NoUsableCheckpointError",
    "ObjectInfo",
    "ObjectNotFoundError",
    "ObjectStore",
    "RejectedCheckpoint",
    "S3ObjectStore",
    "StorageAccessDeniedError",
    "StorageError",
    "StorageUnavailableError",
    "find_weed_binary",
    "open_object_store",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
