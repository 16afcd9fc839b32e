"""The exactly-once job with everything on a real S3 server: SeaweedFS and MinIO (test ids
``[seaweedfs]``, ``[minio]``).

Checkpoints and the transactional file sink both live in the bucket; crashes
hit processing, snapshot, upload, restore and commit. The published files
must hold exactly the crash-free output. Also: wrong credentials end the
job with one clear sentence before anything runs.
"""

from __future__ import annotations

import uuid

import pytest

from barrier_runtime.connectors.files import FileSink
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.demo import running_count_flow
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.errors import StorageAccessDeniedError
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import (
    Crash,
    FaultInjector,
    FaultPoint,
    LocalExecutor,
    TestingSink,
    check_exactly_once,
)

pytestmark = pytest.mark.s3
BUCKET = "cjob-tests"
EVENTS = dict(keys=100, events_per_key=300, partitions=3, batch_size=100, rate_per_partition=4000)


@pytest.fixture
def s3_env(each_s3_server, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", each_s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", each_s3_server.secret_key)
    return each_s3_server


def test_exactly_once_on_s3_with_crashes(s3_env) -> None:
    clean = TestingSink()
    LocalExecutor(
        running_count_flow(clean, **EVENTS),
        parallelism=3,
        store=CheckpointStore(open_object_store(str(_tmp_dir())), "default/clean"),
    ).run()

    run = uuid.uuid4().hex[:8]
    out_url = s3_env.url(BUCKET, f"{run}/out")
    store = CheckpointStore(open_object_store(s3_env.url(BUCKET, f"{run}/cp")), "default/s3job")
    P = FaultPoint
    injector = FaultInjector(
        [
            Crash(P.PROCESSING, subtask=1, after_records=4_000),
            Crash(P.SNAPSHOT, task="count", checkpoint_id=3),
            Crash(P.UPLOAD, checkpoint_id=5),
            Crash(P.RESTORE, attempt=3),
            Crash(P.COMMIT, checkpoint_id=7),
        ]
    )
    result = LocalExecutor(
        running_count_flow(FileSink(out_url), **EVENTS),
        parallelism=3,
        store=store,
        config=CheckpointConfig(interval=0.1),
        fault_injector=injector,
    ).run()
    output = list(FileSink(out_url).read_committed())
    report = check_exactly_once(clean.output, output)
    assert len(injector.fired) == 5, injector.fired
    assert result.restarts == 5
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0), report
    assert not [k for k in FileSink(out_url).store.list("_staging/")], "staging left behind"
    assert store.list_completed(), "checkpoints are in the bucket"


def test_wrong_credentials_fail_with_one_clear_message(s3_server) -> None:
    with pytest.raises(StorageAccessDeniedError) as info:
        store = CheckpointStore(
            open_object_store(
                s3_server.url(BUCKET, "denied"), access_key="nobody", secret_key="wrong-secret"
            ),
            "default/denied",
        )
        LocalExecutor(running_count_flow(TestingSink(), **EVENTS), parallelism=1, store=store).run()
    message = str(info.value)
    assert "credentials" in message and "wrong-secret" not in message
    assert "\n" not in message


def _tmp_dir():
    import tempfile

    return tempfile.mkdtemp(prefix="cjob-clean-")
