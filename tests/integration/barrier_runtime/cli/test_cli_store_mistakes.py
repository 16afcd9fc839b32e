"""A store that cannot be used ends ``cjob`` in one sentence, exit 2, before Spark starts.

Against the real S3 servers (SeaweedFS, and MinIO for wrong credentials and a missing
bucket: ids ``[seaweedfs]``, ``[minio]``) and a closed local port, through the real
``cjob`` executable: nothing but the two ``cjob:`` lines reaches stderr.
"""

from __future__ import annotations

import socket
import uuid

import pytest

from barrier_runtime.storage import s3_server as s3_server_mod

pytestmark = pytest.mark.s3
BUCKET = "cjob-tests"
JOB = "team/orders"
SPARK_START = 5.0
"""Spark's start alone takes longer than this here (~7 s): failing sooner proves it never ran."""


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _url(server: s3_server_mod.LocalS3Server, bucket: str = BUCKET) -> str:
    """A fresh prefix (``server.url`` would create a missing bucket)."""
    return f"s3://{bucket}/cli-{uuid.uuid4().hex[:8]}?endpoint={server.endpoint}"


def _keys(server: s3_server_mod.LocalS3Server) -> dict[str, str]:
    return {"AWS_ACCESS_KEY_ID": server.access_key, "AWS_SECRET_ACCESS_KEY": server.secret_key}


def test_run_against_an_unreachable_endpoint_fails_in_seconds(cjob, ok_pipeline) -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}"
    result = cjob("run", "--store", f"s3://{BUCKET}/cp?endpoint={endpoint}", ok_pipeline)
    sentence = result.assert_mistake(code=75)  # the environment: starting again may help
    assert sentence == (
        f"cannot reach S3 at {endpoint} (connection refused): check that the server is running "
        "and the endpoint is right"
    )
    assert "starting Spark" not in result.out
    assert result.seconds < SPARK_START, result.seconds


def test_checkpoints_list_against_an_unreachable_endpoint(cjob) -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}"
    result = cjob(
        "checkpoints", "list", "--store", f"s3://{BUCKET}/cp?endpoint={endpoint}", "--job", JOB
    )
    result.assert_mistake(f"cannot reach S3 at {endpoint}", "connection refused", code=75)
    assert result.log.name.startswith("cjob-checkpoints-list-")


@pytest.mark.parametrize("which", ["access key", "secret"])
def test_run_with_wrong_credentials(cjob, ok_pipeline, each_s3_server, which) -> None:
    wrong = {**_keys(each_s3_server)}
    wrong["AWS_ACCESS_KEY_ID" if which == "access key" else "AWS_SECRET_ACCESS_KEY"] = "wrong-x1"
    result = cjob("run", "--store", _url(each_s3_server), ok_pipeline, env=wrong)
    result.assert_mistake(
        f"S3 rejected the credentials for s3://{BUCKET} at {each_s3_server.endpoint}",
        "check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY",
        code=75,  # a Secret can be fixed while the job waits
    )
    assert "starting Spark" not in result.out and result.seconds < SPARK_START
    assert "wrong-x1" not in result.err + result.log.read_text()


def test_checkpoints_list_with_wrong_credentials(cjob, each_s3_server) -> None:
    env = {**_keys(each_s3_server), "AWS_SECRET_ACCESS_KEY": "not-the-secret"}
    result = cjob("checkpoints", "list", "--store", _url(each_s3_server), "--job", JOB, env=env)
    result.assert_mistake("S3 rejected the credentials", code=75)


def test_run_with_a_bucket_that_does_not_exist(cjob, ok_pipeline, each_s3_server) -> None:
    result = cjob(
        "run",
        "--store",
        _url(each_s3_server, "cjob-no-such-bucket"),
        ok_pipeline,
        env=_keys(each_s3_server),
    )
    sentence = result.assert_mistake()
    assert sentence == (
        f"bucket cjob-no-such-bucket does not exist at {each_s3_server.endpoint}: check the bucket "
        "name, or create it (create_bucket=true in the store URL does)"
    )
    assert "starting Spark" not in result.out and result.seconds < SPARK_START


@pytest.mark.parametrize("action", ["list", "show"])
def test_checkpoints_in_a_bucket_that_does_not_exist(cjob, s3_server, action) -> None:
    argv = ["checkpoints", action, "--store", _url(s3_server, "cjob-no-such-bucket"), "--job", JOB]
    result = cjob(*argv, *([] if action == "list" else ["1"]), env=_keys(s3_server))
    result.assert_mistake("bucket cjob-no-such-bucket does not exist")


def test_checkpoints_of_a_job_that_is_not_in_the_bucket(cjob, s3_server) -> None:
    prefix = f"cli-{uuid.uuid4().hex[:8]}"
    url = s3_server.url(BUCKET, prefix)
    s3_server.open_store(BUCKET, prefix).put(
        f"{JOB}/checkpoints/chk-0000000001/count/0.arrow", b"torn: never committed"
    )
    env = _keys(s3_server)
    missing = cjob("checkpoints", "list", "--store", url, "--job", "team/order", env=env)
    missing.assert_mistake("holds nothing for job team/order", "check --store and --job")
    present = cjob("checkpoints", "list", "--store", url, "--job", JOB, env=env)
    assert present.code == 1 and "has no completed checkpoint" in present.err
    assert present.out.splitlines()[1].split()[-1] == "incomplete"  # shown since issue 27
    unknown = cjob("checkpoints", "show", "--store", url, "--job", JOB, "999", env=env)
    unknown.assert_mistake("checkpoint 999 is not in", "cjob checkpoints list")
