"""Once a job has ended, nothing of a failed or aborted checkpoint is left in its store
(issue 27), on a local directory and on a real S3 server (SeaweedFS).

A real job (the running count, in-process) whose checkpoints fail: a subtask crashes
while uploading one checkpoint's state (its peers' objects are already stored), and
later crashes while snapshotting another. Before the job starts, a writer of the same
job is killed mid-write (a real process, SIGKILLed where the store has written but not
yet published an object), leaving what no listing shows: a local store's temporary
file, an S3 bucket's incomplete multipart upload. After the job every checkpoint
directory has its ``_metadata``, and no temporary file or incomplete upload remains.
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable

import pytest

from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.demo import running_count_flow
from barrier_runtime.local.executor import JobFailedError, LocalExecutor
from barrier_runtime.storage import checkpoint_store, embedded, errors, object_store
from barrier_runtime.testing import Crash, FaultInjector, FaultPoint, TestingSink

JOB = "default/running-count"
DEBRIS = f"{JOB}/checkpoints/chk-0000000040/channel-state/count-1.bin"
"""Where the killed writer was writing (a checkpoint this job never reaches)."""
BIG = 12 * 1024 * 1024
"""More than one 5 MiB part: with the single-PUT limit scaled down from 5 GiB to 5 MiB
(as for the writer of an object above 5 GiB), an S3 put of it is a multipart upload."""
RECOVERS = (
    Crash(FaultPoint.UPLOAD, subtask=1, checkpoint_id=3),
    Crash(FaultPoint.SNAPSHOT, subtask=0, checkpoint_id=6, attempt=1),
)
"""Two failed attempts, then the job finishes."""
FAILS = (
    Crash(FaultPoint.UPLOAD, subtask=1, checkpoint_id=3),
    Crash(FaultPoint.UPLOAD, subtask=1, checkpoint_id=5, attempt=1),
)
"""With one restart allowed, the job fails for good in its second attempt: the checkpoint
that failed last is newer than every completed one (retention never discards those)."""
DECLINED = ()
"""No crash: subtask 1 cannot upload its state of checkpoints 3 and 4 (the store refuses),
declines them, and the job goes on; their directories hold subtask 0's objects."""


class RefusingStore:
    """Refuses subtask 1's state objects of checkpoints 3 and 4 (as a full disk would)."""

    refused: set[str] = set()

    def __init__(self, inner: object_store.ObjectStore) -> None:
        self.inner = inner

    def put(self, key: str, data: bytes) -> None:
        refused = ("/chk-0000000003/", "/chk-0000000004/")
        if any(r in key for r in refused) and key.rsplit("/", 1)[-1].startswith("1."):
            RefusingStore.refused.add(key.split("/checkpoints/")[1].split("/", maxsplit=1)[0])
            raise errors.StorageUnavailableError(f"refusing to write {key} (test)")
        self.inner.put(key, data)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


_KILLED_WRITER = """
import os, signal, sys
import minio
from barrier_runtime.storage import object_store, s3

s3._SINGLE_PUT_LIMIT = 5 * 1024 * 1024  # 5 GiB, scaled down: a put of more is multipart

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

os.replace = die  # local: after the temporary file, before publishing it
minio.Minio._upload_part = die  # S3: after the multipart upload began, before its parts
store = object_store.open_object_store(sys.argv[1])
store.put(sys.argv[2], b"x" * int(sys.argv[3]))
"""


def kill_a_writer_mid_write(url: str, env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITER, url, DEBRIS, str(BIG)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr


def run_failing_job(store: object_store.ObjectStore, crashes: tuple[Crash, ...]) -> None:
    if crashes is DECLINED:
        RefusingStore.refused.clear()
        store = RefusingStore(store)  # type: ignore[assignment]
    job = LocalExecutor(
        running_count_flow(TestingSink(), keys=200, events_per_key=150, rate_per_partition=3000),
        parallelism=2,
        store=checkpoint_store.CheckpointStore(store, JOB),
        config=CheckpointConfig(interval=0.05),
        fault_injector=FaultInjector(list(crashes)),
        max_restarts=1 if crashes is FAILS else 5,
    )
    if crashes is FAILS:
        with pytest.raises(JobFailedError):
            job.run()
    else:
        job.run()
    assert len(job.result.failures) == len(crashes), job.result.failures
    if crashes is DECLINED:
        assert RefusingStore.refused == {"chk-0000000003", "chk-0000000004"}


def committed_dirs_only(keys: list[str]) -> None:
    """Every checkpoint directory holds its commit record."""
    dirs = {"/".join(k.split("/")[:4]) for k in keys if "/checkpoints/" in k}
    assert dirs, keys
    uncommitted = sorted(d for d in dirs if f"{d}/_metadata" not in keys)
    assert uncommitted == [], uncommitted


@pytest.mark.parametrize(
    "crashes", [DECLINED, RECOVERS, FAILS], ids=["declined", "recovers", "fails-for-good"]
)
def test_on_a_local_store(tmp_path: pathlib.Path, crashes: tuple[Crash, ...]) -> None:
    root = tmp_path / "cp"
    kill_a_writer_mid_write(str(root), {})
    left = [p.name for p in root.rglob(".*.tmp")]
    assert len(left) == 1, left  # the killed writer's debris, invisible to listings
    run_failing_job(object_store.open_object_store(str(root)), crashes)
    files = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
    assert [f for f in files if f.rsplit("/", 1)[-1].startswith(".")] == []
    committed_dirs_only(files)
    assert not (root / DEBRIS).parent.exists()


@pytest.mark.s3
@pytest.mark.parametrize(
    "crashes", [DECLINED, RECOVERS, FAILS], ids=["declined", "recovers", "fails-for-good"]
)
def test_on_s3(s3_server: embedded.EmbeddedS3Server, crashes: tuple[Crash, ...]) -> None:
    prefix = f"leftovers-{uuid.uuid4().hex[:8]}"
    store = s3_server.open_store("cjob-tests", prefix)
    keys = {
        "AWS_ACCESS_KEY_ID": s3_server.access_key,
        "AWS_SECRET_ACCESS_KEY": s3_server.secret_key,
    }
    kill_a_writer_mid_write(store.url(), keys)
    uploads: Callable[[], list[str]] = lambda: [  # noqa: E731
        u.object_name
        for u in store._client._list_multipart_uploads(store.bucket, prefix=f"{prefix}/").uploads
    ]
    assert uploads() == [f"{prefix}/{DEBRIS}"]  # the killed writer's incomplete upload
    run_failing_job(store, crashes)
    committed_dirs_only(list(store.list(f"{JOB}/")))
    assert uploads() == []
