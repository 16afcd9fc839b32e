"""The production storage path: the operator reads checkpoints from a real S3 server.

On both real servers, the session's SeaweedFS (``weed mini``) and MinIO (test ids
``[seaweedfs]``, ``[minio]``); the operator reads the credentials from the Secret
named in ``spec.storage.credentialsSecret``.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from cjob_operator_testing.harness import OperatorHarness

from barrier_runtime.core import metadata as md
from barrier_runtime.core import types
from barrier_runtime.storage import checkpoint_store, s3_server
from cjob_operator.act import catalog

pytestmark = pytest.mark.s3
BUCKET = "cjob-operator-tests"
FP = md.JobFingerprint((types.StepId("count"),), 128, 2)


@pytest.fixture
def s3(each_s3_server: s3_server.LocalS3Server) -> s3_server.LocalS3Server:
    each_s3_server.create_bucket(BUCKET)
    return each_s3_server


def commit(store: Any, cid: int, corrupt: bool = False, kind: str = "checkpoint") -> None:
    folder = f"{'savepoints/sp' if kind == 'savepoint' else 'checkpoints/chk'}-{cid:010d}"
    payload = f"state-{cid}".encode()
    key = f"{folder}/count/0.arrow"
    store.put(key, payload)
    handle = md.StateHandle(
        types.StepId("count"),
        0,
        key,
        len(payload),
        hashlib.sha256(payload).hexdigest(),
        key_group_start=0,
        key_group_end=127,
    )
    meta = md.CheckpointMetadata(
        types.CheckpointId(cid),
        types.CheckpointKind(kind),
        10.0 * cid,
        10.0 * cid + 1,
        FP,
        (handle,),
    )
    store.put(f"{folder}/_metadata", b"{broken" if corrupt else meta.to_json())


def test_s3_catalog_finds_the_newest_usable_snapshot(s3: s3_server.LocalS3Server) -> None:
    root = f"cjob/ns/job-{uuid.uuid4().hex[:8]}"
    store = s3.open_store(BUCKET, root)
    cat = catalog.open_catalog(s3.endpoint, BUCKET, root, s3.access_key, s3.secret_key)
    assert cat.view_sync().newest_usable is None
    for cid in (1, 2, 3):
        commit(store, cid)
    commit(store, 4, corrupt=True)
    commit(store, 5, kind="savepoint")
    store.put("checkpoints/chk-0000000006/count/0.arrow", b"uncommitted")
    view = cat.view_sync()
    assert view.latest_checkpoint is not None and view.latest_checkpoint.id == 3
    assert view.latest_checkpoint.path == f"s3://{BUCKET}/{root}/checkpoints/chk-0000000003"
    assert view.latest_savepoint is not None and view.latest_savepoint.id == 5
    assert [u.id for u in view.unusable] == [4] and view.unusable[0].reason
    removed = cat.cleanup_sync(retained=1)
    # Older checkpoints go; corrupt ones stay for inspection, and so does the torn
    # chk-6: newer than the newest completed one, it may still be in progress.
    assert sorted(removed) == [f"checkpoints/chk-000000000{i}" for i in (1, 2)]
    left = {key.split("/")[1] for key in store.list("checkpoints/")}
    assert left == {"chk-0000000003", "chk-0000000004", "chk-0000000006"}


def test_s3_catalog_and_driver_agree_on_a_corrupt_object_of_unchanged_size(
    s3: s3_server.LocalS3Server,
) -> None:
    """Issue 10 finding 4: checkpoint N's object has other bytes of the same size; the
    operator chooses N-1, exactly what the driver's store restores."""
    root = f"cjob/ns/job-{uuid.uuid4().hex[:8]}"
    store = s3.open_store(BUCKET, root)
    for cid in (1, 2):
        commit(store, cid)
    store.put("checkpoints/chk-0000000002/count/0.arrow", b"STATE-2")  # was b"state-2"
    cat = catalog.open_catalog(s3.endpoint, BUCKET, root, s3.access_key, s3.secret_key)
    view = cat.view_sync()
    assert view.newest_usable is not None and view.newest_usable.id == 1
    assert [(u.id, "sha256" in u.reason) for u in view.unusable] == [(2, True)]
    driver_store = checkpoint_store.CheckpointStore(store, "")
    chosen = driver_store.select_restore_point()
    assert chosen is not None and int(chosen.checkpoint_id) == view.newest_usable.id


def test_s3_discard_of_periodic_savepoints_deletes_only_those(
    s3: s3_server.LocalS3Server,
) -> None:
    """spec.savepoints.retained on S3: the runtime's delete_checkpoint('sp-N') removes the
    named savepoints (metadata first), never a checkpoint, and counts a missing one as gone."""
    root = f"cjob/ns/job-{uuid.uuid4().hex[:8]}"
    store = s3.open_store(BUCKET, root)
    for sid in (2, 3, 5):
        commit(store, sid, kind="savepoint")
    commit(store, 4)
    cat = catalog.open_catalog(s3.endpoint, BUCKET, root, s3.access_key, s3.secret_key)
    gone, error = asyncio.run(cat.discard_savepoints((2, 3, 4)))
    assert error is None and gone == (2, 3, 4)
    assert {key.split("/")[1] for key in store.list("savepoints/")} == {"sp-0000000005"}
    assert {key.split("/")[1] for key in store.list("checkpoints/")} == {"chk-0000000004"}
    view = cat.view_sync()
    assert view.latest_savepoint is not None and view.latest_savepoint.id == 5


def test_wrong_credentials_make_the_store_unreadable_not_empty(
    s3: s3_server.LocalS3Server,
) -> None:
    cat = catalog.open_catalog(s3.endpoint, BUCKET, "cjob/ns/x", "nobody", "wrong-secret")
    view = asyncio.run(cat.view())
    assert not view.readable and view.error


def test_operator_restores_from_the_newest_usable_checkpoint_in_s3(
    harness: OperatorHarness, s3: s3_server.LocalS3Server, manifest: Callable[..., dict[str, Any]]
) -> None:
    h = harness
    job = f"omega-{uuid.uuid4().hex[:6]}"  # one per server: the harness's namespace stays
    creds = f"{job}-creds"
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": creds},
        "data": {
            k: base64.b64encode(v.encode()).decode()
            for k, v in {
                "AWS_ACCESS_KEY_ID": s3.access_key,
                "AWS_SECRET_ACCESS_KEY": s3.secret_key,
            }.items()
        },
    }
    status, body = h.http("POST", f"/api/v1/namespaces/{h.namespace}/secrets", secret)
    assert status == 201, body
    store = s3.open_store(BUCKET, f"cjob/{h.namespace}/{job}")
    commit(store, 11)
    commit(store, 12)
    commit(store, 13, corrupt=True)  # the newest is unusable: fall back, never start empty
    h.create_job(
        manifest(
            job,
            checkpointing={"interval": "1h"},
            storage={
                "endpoint": s3.endpoint,
                "bucket": BUCKET,
                "prefix": "cjob",
                "credentialsSecret": {"name": creds},
            },
        )
    )
    pod = h.wait_for(lambda: h.pod(job), "driver pod restoring from S3")
    assert pod["spec"]["containers"][0]["args"][-2:] == ["--restore-from", "12"]
    h.wait_for(
        lambda: h.job_status(job).get("checkpoints", {}).get("lastCompleted", {}).get("id") == 12,
        "lastCompleted from the store",
    )
