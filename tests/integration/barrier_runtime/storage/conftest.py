"""Fixtures: every store test runs on a local directory and on both real S3 servers
(SeaweedFS and MinIO, one of each per session): ids ``[local]``, ``[seaweedfs]``, ``[minio]``."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from barrier_runtime.core import metadata, types
from barrier_runtime.storage import checkpoint_store, local, object_store, s3_server

BUCKET = "cjob-tests"
FINGERPRINT = metadata.JobFingerprint((types.StepId("count"),), 128, 2)


@pytest.fixture(
    params=[
        "local",
        pytest.param("seaweedfs", marks=pytest.mark.s3),
        pytest.param("minio", marks=[pytest.mark.s3, pytest.mark.minio]),
    ]
)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> object_store.ObjectStore:
    """An empty object store: a local directory, or a fresh prefix on an S3 server."""
    if request.param == "local":
        return local.LocalObjectStore(tmp_path / "store")
    name = "s3_server" if request.param == "seaweedfs" else "minio_server"
    server: s3_server.LocalS3Server = request.getfixturevalue(name)
    return server.open_store(BUCKET, f"test-{uuid.uuid4().hex[:12]}")


@pytest.fixture
def checkpoints(store: object_store.ObjectStore) -> checkpoint_store.CheckpointStore:
    return checkpoint_store.CheckpointStore(store, "default/my-job")


MakeCheckpoint = Callable[..., metadata.CheckpointMetadata]


@pytest.fixture
def make_checkpoint(checkpoints: checkpoint_store.CheckpointStore) -> MakeCheckpoint:
    """Write state objects for checkpoint ``cid`` and commit it (unless ``commit=False``)."""

    def make(
        cid: int,
        *,
        kind: types.CheckpointKind = types.CheckpointKind.CHECKPOINT,
        objects: Sequence[str] = ("count/0.arrow", "count/1.arrow"),
        extra: Sequence[metadata.StateHandle] = (),
        commit: bool = True,
    ) -> metadata.CheckpointMetadata:
        handles = [
            checkpoints.write_state(
                cid,
                kind,
                rel,
                f"state of {rel} at {cid}".encode() * 10,
                step_id="count",
                subtask=i,
                handle_kind=metadata.HandleKind.KEYED,
                key_group_start=64 * i,
                key_group_end=64 * i + 63,
            )
            for i, rel in enumerate(objects)
        ]
        meta = metadata.CheckpointMetadata(
            checkpoint_id=types.CheckpointId(cid),
            kind=kind,
            trigger_time=1000.0 + cid,
            completion_time=1000.5 + cid,
            fingerprint=FINGERPRINT,
            state_handles=(*handles, *extra),
            source_positions={types.StepId("inp"): {"part-0": cid * 100}},
            sink_transactions={types.StepId("out"): ({"txn": f"t-{cid}"},)},
        )
        if commit:
            checkpoints.commit(meta)
        return meta

    return make
