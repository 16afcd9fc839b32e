"""Checks that a checkpoint store is usable, made before anything expensive starts.

Starting Spark takes seconds; a mistyped endpoint, wrong credentials, a
missing bucket or an unwritable directory should fail before that, with the
store's own one-sentence error, not minutes later as failed checkpoints.

* :func:`check_usable` (jobs): list the job's checkpoints (reaches the
  server, checks credentials and the bucket), then write and delete one small
  probe object at the job's root (checks write access and that local
  directories can be created); with ``restore_from`` also check that the
  named checkpoint exists.
* :func:`require_job` (inspection commands): the store and the job exist, so a
  typo is an error instead of an empty listing.

>>> import tempfile
>>> from barrier_runtime.storage import object_store
>>> root = tempfile.mkdtemp()
>>> store = checkpoint_store.CheckpointStore(object_store.open_object_store(root), "ns/job")
>>> check_usable(store)
>>> require_job(store)
Traceback (most recent call last):
...
barrier_runtime.storage.errors.JobNotFoundError: ... holds nothing for job ns/job: ...
"""

from __future__ import annotations

import os
import uuid

from barrier_runtime.storage import checkpoint_store, errors, local

PROBE_NAME = "_cjob-write-probe"


def check_usable(
    store: checkpoint_store.CheckpointStore, *, restore_from: int | str | None = None
) -> None:
    """Raise the store's named error if the job cannot read and write its checkpoints."""
    store.highest_checkpoint_id()
    key = f"{store.job_path}/{PROBE_NAME}-{os.getpid()}-{uuid.uuid4().hex[:8]}".lstrip("/")
    store.object_store.put(key, b"probe")
    store.object_store.delete(key)
    if restore_from is not None:
        store.find(restore_from)


def require_job(store: checkpoint_store.CheckpointStore) -> None:
    """Raise :class:`~errors.StoreNotFoundError` / :class:`~errors.JobNotFoundError` on a typo."""
    objects = store.object_store
    if isinstance(objects, local.LocalObjectStore) and not objects.root.is_dir():
        raise errors.StoreNotFoundError(
            f"the store directory {objects.root} does not exist: check --store"
        )
    prefix = f"{store.job_path}/" if store.job_path else ""
    if next(iter(objects.list(prefix)), None) is None:
        raise errors.JobNotFoundError(
            f"{objects.describe()} holds nothing for job {store.job_path}: check --store and "
            "--job (NAMESPACE/NAME, as the job was run with)"
        )
