"""What only a real S3 server shows, on SeaweedFS and MinIO alike (ids ``[seaweedfs]``,
``[minio]``): one request per object up to 5 GiB (a writer killed mid-put leaves nothing),
multipart uploads above that and the debris of an unfinished one, listings longer than one
page, and a bucket that disappears under a job."""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
import signal
import subprocess
import sys
import uuid

import minio
import pytest
import waiting
from barrier_runtime_testing import minio_server

from barrier_runtime.core import metadata, types
from barrier_runtime.storage import checkpoint_store, errors, object_store, s3
from barrier_runtime.storage import s3_server as s3_server_mod

pytestmark = pytest.mark.s3
BUCKET = "cjob-tests"
PART = 5 * 1024 * 1024
"""S3's smallest part, the minio SDK's part size for objects below 50 GiB."""
PAGE = 1000
"""Keys per page of a ListObjectsV2 answer, and per DeleteObjects request."""


def raw_client(server: s3_server_mod.LocalS3Server) -> minio.Minio:
    return minio.Minio(
        server.endpoint.removeprefix("http://"),
        access_key=server.access_key,
        secret_key=server.secret_key,
        secure=False,
    )


def fresh_store(server: s3_server_mod.LocalS3Server) -> s3.S3ObjectStore:
    return server.open_store(BUCKET, f"behaviour-{uuid.uuid4().hex[:12]}")


def test_a_put_of_many_parts_worth_is_one_request(
    each_s3_server: s3_server_mod.LocalS3Server,
) -> None:
    store = fresh_store(each_s3_server)
    data = hashlib.shake_256(b"state").digest(2 * PART + 12_345)
    store.put("chk-1/big.arrow", data)
    assert store.get("chk-1/big.arrow") == data
    assert store.stat("chk-1/big.arrow") == object_store.ObjectInfo(size=len(data))
    etag = raw_client(each_s3_server).stat_object(BUCKET, f"{store.prefix}/chk-1/big.arrow").etag
    assert str(etag).strip('"') == hashlib.md5(data).hexdigest()  # one PutObject, not parts


def test_above_the_single_put_limit_a_put_is_a_multipart_upload(
    each_s3_server: s3_server_mod.LocalS3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(s3, "_SINGLE_PUT_LIMIT", PART)  # 5 GiB, scaled down
    store = fresh_store(each_s3_server)
    data = hashlib.shake_256(b"state").digest(2 * PART + 12_345)
    store.put("chk-1/big.arrow", data)
    assert store.get("chk-1/big.arrow") == data
    etag = raw_client(each_s3_server).stat_object(BUCKET, f"{store.prefix}/chk-1/big.arrow").etag
    assert str(etag).strip('"').endswith("-3"), etag  # three parts
    assert list(store.list("chk-1/")) == ["chk-1/big.arrow"]


_KILLED_MID_PUT = """
import os, signal, sys
import urllib3.connection
from barrier_runtime.storage import object_store

send = urllib3.connection.HTTPConnection.send

def send_half_then_die(self, data):
    if len(data) > 1024 * 1024:  # the object's bytes, not the request's head
        send(self, data[: len(data) // 2])
        os.kill(os.getpid(), signal.SIGKILL)
    send(self, data)

urllib3.connection.HTTPConnection.send = send_half_then_die
object_store.open_object_store(sys.argv[1]).put(sys.argv[2], b"x" * int(sys.argv[3]))
"""


def test_a_writer_killed_mid_put_leaves_nothing(
    each_s3_server: s3_server_mod.LocalS3Server,
) -> None:
    store = fresh_store(each_s3_server)
    key = "checkpoints/chk-2/count/0.arrow"
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": each_s3_server.access_key,
        "AWS_SECRET_ACCESS_KEY": each_s3_server.secret_key,
    }
    writer = subprocess.run(
        [sys.executable, "-c", _KILLED_MID_PUT, store.url(), key, str(2 * PART + 12_345)],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert writer.returncode == -signal.SIGKILL, writer.stderr
    client = raw_client(each_s3_server)
    name = f"{store.prefix}/{key}"
    assert client._list_multipart_uploads(BUCKET, prefix=name).uploads == []
    assert store.stat(key) is None and list(store.list("")) == []


def test_an_unfinished_multipart_upload_is_invisible_and_where_listed_cleaned_up(
    each_s3_server: s3_server_mod.LocalS3Server,
) -> None:
    """The debris of a killed writer of an object above 5 GiB. MinIO lists uploads of one
    exact key only, so ``delete_incomplete`` cannot find them there: why ``put`` sends up
    to 5 GiB in one request."""
    store = fresh_store(each_s3_server)
    client = raw_client(each_s3_server)
    name = f"{store.prefix}/checkpoints/chk-2/count/0.arrow"
    upload_id = client._create_multipart_upload(BUCKET, name, {})
    client._upload_part(BUCKET, name, b"x" * PART, None, upload_id, 1)  # then the writer dies
    assert list(store.list("checkpoints/")) == []

    def pending(prefix: str) -> list[str]:
        found = client._list_multipart_uploads(BUCKET, prefix=prefix).uploads
        return [u.object_name for u in found]

    assert pending(name) == [name]
    if isinstance(each_s3_server, minio_server.MinioServer):
        assert pending(f"{store.prefix}/") == []
        assert store.delete_incomplete("checkpoints/") == 0
        client._abort_multipart_upload(BUCKET, name, upload_id)
    else:
        assert pending(f"{store.prefix}/") == [name]
        assert store.delete_incomplete("checkpoints/other/") == 0
        assert store.delete_incomplete("checkpoints/") == 1
    assert pending(name) == []


def test_listing_and_deleting_more_keys_than_one_page(
    each_s3_server: s3_server_mod.LocalS3Server,
) -> None:
    store = fresh_store(each_s3_server)
    keys = sorted(f"checkpoints/chk-{i % 3}/s/{i:05d}" for i in range(PAGE + 150))
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda key: store.put(key, b"v"), keys))
    store.put("checkpointsX/other", b"v")
    assert list(store.list("checkpoints/")) == keys
    assert list(store.list("checkpoints/chk-1/")) == [k for k in keys if "/chk-1/" in k]
    store.delete_many(keys)
    assert list(store.list("")) == ["checkpointsX/other"]


def _checkpoint(store: checkpoint_store.CheckpointStore, cid: int) -> metadata.CheckpointMetadata:
    kind = types.CheckpointKind.CHECKPOINT
    handle = store.write_state(
        cid, kind, "count/0.arrow", b"state", step_id="count", subtask=0,
        handle_kind=metadata.HandleKind.KEYED, key_group_start=0, key_group_end=127,
    )  # fmt: skip
    return metadata.CheckpointMetadata(
        checkpoint_id=types.CheckpointId(cid),
        kind=kind,
        trigger_time=float(cid),
        completion_time=cid + 0.5,
        fingerprint=metadata.JobFingerprint((types.StepId("count"),), 128, 1),
        state_handles=(handle,),
    )


def test_a_bucket_deleted_under_a_job_is_named_in_one_sentence(
    each_s3_server: s3_server_mod.LocalS3Server,
) -> None:
    bucket = f"cjob-vanishing-{uuid.uuid4().hex[:8]}"
    store = each_s3_server.open_store(bucket, "jobs")
    checkpoints = checkpoint_store.CheckpointStore(store, "default/job")
    first = _checkpoint(checkpoints, 1)
    checkpoints.commit(first)
    assert checkpoints.select_restore_point() == first

    client = raw_client(each_s3_server)  # someone empties and deletes the bucket
    for failure in client.remove_objects(
        bucket,
        [
            minio.deleteobjects.DeleteObject(o.object_name)
            for o in client.list_objects(bucket, recursive=True)
        ],
    ):
        raise AssertionError(failure)
    client.remove_bucket(bucket)

    sentence = (
        f"bucket {bucket} does not exist at {each_s3_server.endpoint}: check the bucket name, "
        "or create it (create_bucket=true in the store URL does)"
    )
    # SeaweedFS's gateway learns of a deleted bucket a moment later (a write before that
    # recreates it): a job sees the bucket gone once the server says so.
    waiting.wait_until(lambda: not client.bucket_exists(bucket), 10, f"{bucket} to be gone")
    actions = [
        checkpoints.select_restore_point,
        checkpoints.highest_checkpoint_id,
        lambda: _checkpoint(checkpoints, 2),
        lambda: store.delete_many(["default/job/a", "default/job/b"]),
        lambda: store.delete_incomplete("default/job/"),
    ]
    if isinstance(each_s3_server, minio_server.MinioServer):
        # SeaweedFS (4.48) accepts a conditional PUT into a deleted bucket, recreating it
        actions.append(lambda: checkpoints.commit(first))
    for action in actions:
        with pytest.raises(errors.BucketNotFoundError) as failure:
            action()
        assert str(failure.value) == sentence
    client.make_bucket(bucket)  # back: the job's store works again, from an empty bucket
    assert checkpoints.select_restore_point() is None
