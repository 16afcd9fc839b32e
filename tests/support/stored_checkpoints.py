"""Completed checkpoints written straight into a store, for tests of what reads them."""

from __future__ import annotations

import pathlib

from barrier_runtime.core import metadata, types
from barrier_runtime.storage import checkpoint_store, object_store


def commit_checkpoint(
    root: pathlib.Path | str,
    cid: int,
    job: str,
    *,
    kind: types.CheckpointKind = types.CheckpointKind.CHECKPOINT,
    step: str = "count",
    max_parallelism: int = 128,
) -> checkpoint_store.CheckpointStore:
    """Checkpoint (or savepoint) ``cid`` of ``job`` under ``root``: one state object of
    ``step`` and its ``_metadata``, as the coordinator commits them."""
    store = checkpoint_store.CheckpointStore(object_store.open_object_store(str(root)), job)
    handle = store.write_state(
        cid,
        kind,
        f"{step}/0.arrow",
        b"state",
        step_id=step,
        subtask=0,
        handle_kind=metadata.HandleKind.KEYED,
        key_group_start=0,
        key_group_end=max_parallelism - 1,
    )
    store.commit(
        metadata.CheckpointMetadata(
            checkpoint_id=types.CheckpointId(cid),
            kind=kind,
            trigger_time=1.0,
            completion_time=2.0,
            fingerprint=metadata.JobFingerprint((types.StepId(step),), max_parallelism, 1),
            state_handles=(handle,),
            source_positions={},
            sink_transactions={},
        )
    )
    return store


OK_PIPELINE_JOB = "default/p"
"""The job of the CLI tests' ``ok_pipeline`` (``Dataflow("p")``) when ``--job`` is not given."""


def commit_ok_pipeline_checkpoint(
    root: pathlib.Path,
    cid: int,
    *,
    kind: types.CheckpointKind = types.CheckpointKind.CHECKPOINT,
    max_parallelism: int = 128,
    job: str = OK_PIPELINE_JOB,
) -> checkpoint_store.CheckpointStore:
    """Checkpoint ``cid`` of the ``ok_pipeline`` (one state object of its sink ``out``)."""
    return commit_checkpoint(root, cid, job, kind=kind, step="out", max_parallelism=max_parallelism)
