"""S3 specifics: conditional create on the wire, and one clear named error per failure, on
both real servers (SeaweedFS and MinIO: ids ``[seaweedfs]``, ``[minio]``)."""

from __future__ import annotations

import contextlib
import http.server
import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import http_fakes
import minio
import minio.error
import pytest
import waiting

from barrier_runtime.storage import checkpoint_store, errors, object_store, s3
from barrier_runtime.storage import s3_server as s3_server_mod

pytestmark = pytest.mark.s3
BUCKET = "cjob-tests"


class _RecordingS3(http.server.BaseHTTPRequestHandler):
    """Answers every PUT like S3 would the second time (412) and records the headers."""

    seen: list[dict[str, str]] = []

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()})
        body = (
            b"<?xml version='1.0'?><Error><Code>PreconditionFailed</Code>"
            b"<Message>At least one of the pre-conditions you specified did not hold</Message>"
            b"</Error>"
        )
        self.send_response(412)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def recording_endpoint() -> Iterator[str]:
    _RecordingS3.seen = []
    with http_fakes.serving(_RecordingS3) as url:
        yield url


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_put_if_absent_sends_a_real_if_none_match_header(recording_endpoint: str) -> None:
    store = s3.S3ObjectStore(
        recording_endpoint, BUCKET, "p", access_key="k", secret_key="s", region="us-east-1"
    )
    assert store.put_if_absent("chk-1/_metadata", b"{}") is False
    (headers,) = _RecordingS3.seen
    assert headers["if-none-match"] == "*"
    assert not any(k.startswith("x-amz-meta-") for k in headers)
    assert "if-none-match" in headers["authorization"].lower()  # signed, not just sent


def test_the_server_answers_412_to_the_second_conditional_writer(
    each_s3_server: s3_server_mod.LocalS3Server,
) -> None:
    store = each_s3_server.open_store(BUCKET, "conditional")
    store.delete("once")
    assert store.put_if_absent("once", b"a") is True
    assert store.put_if_absent("once", b"b") is False
    assert store.get("once") == b"a"
    raw = minio.Minio(
        each_s3_server.endpoint.removeprefix("http://"),
        access_key=each_s3_server.access_key,
        secret_key=each_s3_server.secret_key,
        secure=False,
    )
    with pytest.raises(minio.error.S3Error) as refused:
        raw._execute("PUT", BUCKET, "conditional/once", body=b"c", headers={"If-None-Match": "*"})
    assert (refused.value.response.status, refused.value.code) == (412, "PreconditionFailed")


@pytest.mark.parametrize("which", ["secret", "access key"])
def test_wrong_credentials_give_one_clear_access_denied_sentence(
    each_s3_server: s3_server_mod.LocalS3Server, which: str, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "wrong-secret-value" if which == "secret" else each_s3_server.secret_key
    access = each_s3_server.access_key if which == "secret" else "nobody"
    store = s3.S3ObjectStore(
        each_s3_server.endpoint, BUCKET, "creds", access_key=access, secret_key=secret
    )
    checkpoints = checkpoint_store.CheckpointStore(store, "default/job")
    with caplog.at_level(logging.DEBUG):
        for action in (
            lambda: store.get("x"),
            lambda: store.put("x", b"1"),
            checkpoints.select_restore_point,
            checkpoints.highest_checkpoint_id,
        ):
            with pytest.raises(errors.StorageAccessDeniedError) as failure:
                action()
            message = str(failure.value)
            assert message.startswith(f"S3 rejected the credentials for s3://{BUCKET} at ")
            assert each_s3_server.endpoint in message and "AWS_ACCESS_KEY_ID" in message
            assert "\n" not in message and secret not in message
    assert secret not in caplog.text


def test_unreachable_server_is_storage_unavailable_naming_the_endpoint() -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}"
    store = object_store.open_object_store(
        f"s3://{BUCKET}/x?endpoint={endpoint}", access_key="k", secret_key="s"
    )
    checkpoints = checkpoint_store.CheckpointStore(store, "default/job")
    with pytest.raises(errors.StorageUnavailableError) as failure:
        checkpoints.select_restore_point()
    assert str(failure.value) == (
        f"cannot reach S3 at {endpoint} (connection refused): check that the server is "
        "running and the endpoint is right"
    )


def test_unknown_host_is_storage_unavailable() -> None:
    store = s3.S3ObjectStore(
        "http://no-such-host.invalid:9000", BUCKET, access_key="k", secret_key="s", retries=0
    )
    with pytest.raises(errors.StorageUnavailableError, match="does not resolve"):
        store.stat("x")


def test_missing_bucket_is_named_and_can_be_created(
    each_s3_server: s3_server_mod.LocalS3Server,
) -> None:
    store = s3.S3ObjectStore(
        each_s3_server.endpoint,
        "cjob-missing-bucket",
        access_key=each_s3_server.access_key,
        secret_key=each_s3_server.secret_key,
    )
    with pytest.raises(errors.BucketNotFoundError, match="cjob-missing-bucket does not exist"):
        list(store.list(""))
    url = f"{store.url()}&create_bucket=true"
    created = object_store.open_object_store(
        url, access_key=each_s3_server.access_key, secret_key=each_s3_server.secret_key
    )
    assert list(created.list("")) == []


def test_credentials_come_from_the_environment(
    each_s3_server: s3_server_mod.LocalS3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", each_s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", each_s3_server.secret_key)
    store = object_store.open_object_store(each_s3_server.url(BUCKET, "from-env"))
    store.put("k", b"v")
    assert store.get("k") == b"v"
    assert each_s3_server.secret_key not in store.describe()


@pytest.mark.parametrize(
    "server_name", ["s3_server", pytest.param("minio_server", marks=pytest.mark.minio)]
)
def test_an_upload_survives_a_server_that_stalls_while_reading_its_body(
    request: pytest.FixtureRequest, server_name: str
) -> None:
    """urllib3 sends a request's body under the *connect* timeout: a job's store must wait
    out a server that stops reading for several seconds (a busy embedded server did, during
    a 550 MB full checkpoint), and a store with a short connect timeout shows the stall is
    real."""
    server: s3_server_mod.LocalS3Server = request.getfixturevalue(server_name)
    prefix = f"stall-{uuid.uuid4().hex[:8]}"
    server.create_bucket(BUCKET)
    url = f"s3://{BUCKET}/{prefix}?endpoint={server.endpoint}"
    keys = {"access_key": server.access_key, "secret_key": server.secret_key}
    job_store = object_store.open_object_store(url, **keys)  # a running job's timeouts
    impatient = object_store.open_object_store(
        url, **keys, timeouts=object_store.Timeouts(connect=2.0, read=60.0, retries=0)
    )
    body = os.urandom(256 << 20)  # far more than loopback sockets buffer (64 MB fit)
    # The control, where the stall does hold the body back (SeaweedFS; MinIO's reads
    # happen to absorb it): a 2 s connect timeout fails the upload.
    stores = [(job_store, True), (impatient, False)] if server_name == "s3_server" else []
    for store, survives in stores or [(job_store, True)]:
        outcome: list[BaseException | None] = []
        upload = threading.Thread(target=_put, args=(store, "big", body, outcome))
        with _stalled(server, seconds=6.0, after=upload.start):
            upload.join(timeout=120)
        assert outcome, "the upload did not end"
        if survives:
            assert outcome[0] is None, outcome[0]
            assert store.get("big") == body
        else:
            assert isinstance(outcome[0], errors.StorageError), outcome[0]


def _put(
    store: object_store.ObjectStore, key: str, data: bytes, outcome: list[BaseException | None]
) -> None:
    try:
        store.put(key, data)
    except BaseException as exc:  # handed to the test thread
        outcome.append(exc)
    else:
        outcome.append(None)


@contextlib.contextmanager
def _stalled(
    server: s3_server_mod.LocalS3Server, *, seconds: float, after: Callable[[], None]
) -> Iterator[None]:
    """The server process stopped (SIGSTOP) for ``seconds`` once the body flows in: its
    sockets hold more unread bytes than a request without a body (the client first sends
    small requests and waits for their answers, under the read timeout, and hashes the
    body, which on a loaded machine has taken longer than a stall begun at the start)."""
    pid = server.pid
    assert pid is not None
    port = int(server.endpoint.rsplit(":", 1)[1])
    after()
    waiting.wait_until(
        lambda: _unread_bytes(port) > _BODY_FLOWING,
        timeout=120,
        what="the body queueing at the server",
        interval=0.002,
    )
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)  # the stall itself is what is under test
    finally:
        os.kill(pid, signal.SIGCONT)
    yield


_BODY_FLOWING = 64 << 10
"""Unread bytes at the server that only a body makes (a request's head is under 1 KB)."""


def _unread_bytes(port: int) -> int:
    """What the server's sockets on ``port`` received and it has not read (kernel queues)."""
    total = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError), open(table) as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                local, queues = fields[1], fields[4]
                if int(local.rsplit(":", 1)[1], 16) == port:
                    total += int(queues.split(":")[1], 16)
    return total
