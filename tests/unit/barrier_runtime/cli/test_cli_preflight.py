"""Everything checkable is checked before Spark starts (issue 11, item 6).

Each bad input is one case: ``cjob`` ends with exit 2 and one sentence naming
the option as the user wrote it, no traceback, before any SparkSession is
built (a recording double stands in for ``build_session``) and in less time
than Spark takes to start. The first tests show the double does see a
command that gets past its checks, so "never reached" means something.
"""

from __future__ import annotations

import http.server
import json
import pathlib
import socket
from collections.abc import Iterator

import http_fakes
import pytest
import stored_checkpoints

from barrier_runtime.cli import preflight
from barrier_runtime.core import types
from barrier_runtime.storage import checkpoint_store, object_store

JOB = "default/p"
"""The job of the ``ok_pipeline`` (``Dataflow("p")``) when ``--job`` is not given."""


def _commit(
    root: pathlib.Path,
    cid: int,
    *,
    kind=types.CheckpointKind.CHECKPOINT,
    max_parallelism: int = 128,
    job: str = JOB,
) -> checkpoint_store.CheckpointStore:
    return stored_checkpoints.commit_checkpoint(
        root, cid, job, kind=kind, step="out", max_parallelism=max_parallelism
    )


# -- the double sees a command that passes -----------------------------------------------


@pytest.mark.parametrize(
    "restore",
    [
        None,
        "1",
        "chk-1",
        "{store}/default/p/checkpoints/chk-0000000001",
        "default/p/checkpoints/chk-0000000001/_metadata",
        "file://{store}/default/p/checkpoints/chk-0000000001",
    ],
)
def test_a_valid_run_gets_as_far_as_starting_spark(
    cjob, spark_starts, ok_pipeline, tmp_path, restore
) -> None:
    store = tmp_path / "cp"
    _commit(store, 1)
    extra = [] if restore is None else ["--restore-from", restore.format(store=store)]
    result = cjob("run", ok_pipeline, "--store", str(store), *extra)
    assert spark_starts == ["local[2]"], result.err
    assert "starting Spark (local[2])" in result.out
    assert result.assert_mistake() == "this unit test does not start Spark"


def test_a_valid_demo_gets_as_far_as_starting_spark(cjob, spark_starts, tmp_path) -> None:
    result = cjob("demo", "--store", str(tmp_path / "store"), "--keys", "3")
    assert spark_starts == ["local[3]"], result.err


# -- option values ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "sentence"),
    [
        pytest.param(
            ["--control-port", "99999"],
            "--control-port must be a TCP port from 0 to 65535 (0 picks a free one), got 99999",
            id="control-port-too-high",
        ),
        pytest.param(
            ["--control-port", "-1"],
            "--control-port must be a TCP port from 0 to 65535 (0 picks a free one), got -1",
            id="control-port-negative",
        ),
        pytest.param(
            ["--max-restarts", "-1"],
            "--max-restarts must not be negative (0 fails the job at the first failure), got -1",
            id="max-restarts",
        ),
        pytest.param(
            ["--restart-window", "0"],
            "--restart-window must be a positive number (seconds in which "
            "--max-restarts count), got 0",
            id="restart-window",
        ),
        pytest.param(
            ["--restart-backoff", "-2"],
            "--restart-backoff must not be negative (seconds before the first restart), got -2",
            id="restart-backoff",
        ),
        pytest.param(
            ["--checkpoint-interval", "0"],
            "--checkpoint-interval must be a positive number (seconds between checkpoints), got 0",
            id="checkpoint-interval",
        ),
        pytest.param(
            ["--checkpoint-interval", "nan"],
            "--checkpoint-interval must be a positive number (seconds between "
            "checkpoints), got nan",
            id="checkpoint-interval-nan",
        ),
        pytest.param(
            ["--checkpoint-timeout", "-1"],
            "--checkpoint-timeout must be a positive number (seconds a checkpoint may "
            "take), got -1",
            id="checkpoint-timeout",
        ),
        pytest.param(
            ["--stop-grace-period", "0"],
            "--stop-grace-period must be a positive number, got 0",
            id="stop-grace-period",
        ),
        pytest.param(
            ["--status-every", "0"],
            "--status-every must be a positive number, got 0",
            id="status-every",
        ),
        pytest.param(
            ["--mode", "at-least-once", "--unaligned"],
            "--unaligned needs --mode exactly-once (unaligned checkpoints store in-flight "
            "records, which only exactly-once needs), got at-least-once",
            id="unaligned-at-least-once",
        ),
        pytest.param(
            ["-p", "0"],
            "--parallelism must be at least 1 (the number of Spark workers), got 0: use e.g. -p 2",
            id="parallelism-zero",
        ),
        pytest.param(
            ["--job", "a//b"],
            "--job must be NAMESPACE/NAME (e.g. default/orders), got 'a//b'",
            id="job",
        ),
        pytest.param(
            ["--restore-from", "latest"],
            "--restore-from 'latest' names no checkpoint: give an id (42), chk-42, sp-42 "
            "or the path of a checkpoint or savepoint directory",
            id="restore-garbage",
        ),
    ],
)
def test_bad_option_values_of_run(refused, ok_pipeline, tmp_path, argv, sentence) -> None:
    assert refused("run", ok_pipeline, "--store", str(tmp_path / "cp"), *argv).sentence == sentence


@pytest.mark.parametrize(
    ("argv", "sentence"),
    [
        pytest.param(["--keys", "0"], "--keys must be at least 1, got 0", id="keys"),
        pytest.param(
            ["--events-per-key", "-5"],
            "--events-per-key must be at least 1, got -5",
            id="events-per-key",
        ),
        pytest.param(
            ["--interval", "0"],
            "--interval must be a positive number (seconds between checkpoints), got 0",
            id="interval",
        ),
        pytest.param(
            ["--rate", "0"],
            "--rate must be a positive number (events per second), got 0",
            id="rate",
        ),
        pytest.param(
            ["--parallelism", "0"],
            "--parallelism must be at least 1 (the number of Spark workers), got 0",
            id="parallelism",
        ),
        pytest.param(
            ["--kill-at", "1.5"],
            "--kill-at must be a fraction between 0 and 1 (e.g. 0.45), got 1.5",
            id="kill-at",
        ),
        pytest.param(
            ["--store", "localhost:9000"],
            "--store 'localhost:9000' is a server "
            "address, not a store: for an S3 server write "
            "s3://BUCKET/PREFIX?endpoint=http://localhost:9000, for a local directory "
            "./localhost:9000",
            id="store-host-port",
        ),
    ],
)
def test_bad_option_values_of_demo(refused, argv, sentence) -> None:
    assert refused("demo", *argv).sentence == sentence


# -- the store URL ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("store", "sentence"),
    [
        pytest.param(
            "localhost:9000",
            "--store 'localhost:9000' is a server address, not a store: for an S3 "
            "server write s3://BUCKET/PREFIX?endpoint=http://localhost:9000, for a "
            "local directory ./localhost:9000",
            id="host-port",
        ),
        pytest.param(
            "minio:9000/checkpoints",
            "--store 'minio:9000/checkpoints' is a server address, not a store: for an "
            "S3 server write s3://BUCKET/PREFIX?endpoint=http://minio:9000, for a local "
            "directory ./minio:9000/checkpoints",
            id="host-port-path",
        ),
        pytest.param(
            "http://127.0.0.1:9000/bucket",
            "--store 'http://127.0.0.1:9000/bucket' is an HTTP address, not a store: "
            "for an S3 server write s3://BUCKET/PREFIX?endpoint=http://127.0.0.1:9000",
            id="http",
        ),
        pytest.param(
            "gcs://bucket/cp",
            "--store 'gcs://bucket/cp' has the unknown scheme 'gcs': use "
            "s3://BUCKET/PREFIX?endpoint=http://HOST:PORT, file:///PATH or a plain path",
            id="unknown-scheme",
        ),
        pytest.param(
            "s3://bucket/cp?endpoint=localhost:9000",
            "the S3 endpoint 'localhost:9000' (in --store) has no scheme: write "
            "http://localhost:9000 (or https://localhost:9000 for TLS)",
            id="endpoint-without-scheme",
        ),
        pytest.param(
            "",
            "--store is empty: give a directory or an s3://BUCKET/PREFIX?endpoint=… URL",
            id="empty",
        ),
    ],
)
def test_bad_store_urls(refused, ok_pipeline, tmp_path, monkeypatch, store, sentence) -> None:
    monkeypatch.chdir(tmp_path)
    assert refused("run", ok_pipeline, "--store", store).sentence == sentence
    assert not (tmp_path / "localhost:9000").exists()


def test_an_endpoint_from_the_environment_needs_a_scheme_too(
    refused, ok_pipeline, monkeypatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "minio:9000")
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    assert refused("run", ok_pipeline, "--store", "s3://bucket/cp").sentence == (
        "the S3 endpoint 'minio:9000' (from $AWS_ENDPOINT_URL) has no scheme: write "
        "http://minio:9000 (or https://minio:9000 for TLS)"
    )


# -- the store itself ---------------------------------------------------------------------


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """An S3 endpoint that accepts connections and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield f"http://127.0.0.1:{server.getsockname()[1]}"


class _DenyingS3(http.server.BaseHTTPRequestHandler):
    """Answers every request as S3 does for an unknown access key."""

    def _deny(self) -> None:
        body = (
            b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidAccessKeyId</Code>'
            b"<Message>The access key does not exist.</Message></Error>"
        )
        self.send_response(403)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._deny()

    def do_PUT(self) -> None:
        self._deny()

    def do_HEAD(self) -> None:
        self._deny()

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def denying_endpoint() -> Iterator[str]:
    with http_fakes.serving(_DenyingS3) as url:
        yield url


def test_an_s3_endpoint_that_does_not_answer(
    refused, ok_pipeline, silent_endpoint, monkeypatch
) -> None:
    """The check waits for its own short timeout (shortened further here), not the job's 60 s."""
    monkeypatch.setattr(preflight, "PROBE_TIMEOUTS", object_store.Timeouts(1.0, 1.0, 0))
    store = f"s3://bucket1/cp?endpoint={silent_endpoint}"
    assert refused("run", ok_pipeline, "--store", store, code=75).sentence == (
        f"cannot reach S3 at {silent_endpoint} (the server did not answer in time): check that "
        "the server is running and the endpoint is right"
    )


def test_the_store_check_waits_less_than_spark_takes_to_start() -> None:
    timeouts = preflight.PROBE_TIMEOUTS
    assert timeouts.retries == 0 and timeouts.connect < 5 and timeouts.read < 5


def test_an_s3_endpoint_that_rejects_the_credentials(
    refused, ok_pipeline, denying_endpoint, monkeypatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "nobody")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    store = f"s3://bucket1/cp?endpoint={denying_endpoint}"
    assert refused("run", ok_pipeline, "--store", store, code=75).sentence == (
        f"S3 rejected the credentials for s3://bucket1 at {denying_endpoint} (InvalidAccessKeyId): "
        "check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the bucket policy"
    )


def test_a_local_store_that_cannot_be_created(refused, ok_pipeline, tmp_path) -> None:
    (tmp_path / "plain").write_text("a file, not a directory")
    store = tmp_path / "plain" / "cp"
    refused("run", ok_pipeline, "--store", str(store)).result.assert_mistake(
        "cannot create the directory", str(store)
    )


# -- what to restore ----------------------------------------------------------------------


def test_restore_from_a_path_that_does_not_exist(refused, ok_pipeline, tmp_path) -> None:
    sentence = refused(
        "run", ok_pipeline, "--store", str(tmp_path / "cp"), "--restore-from", "/nonexistent/chk-5"
    ).sentence
    assert sentence == (
        "--restore-from /nonexistent/chk-5 does not exist: name a checkpoint or savepoint "
        "directory, or an id (cjob checkpoints list shows them)"
    )


def test_restore_from_a_relative_path_that_does_not_exist(refused, ok_pipeline, tmp_path) -> None:
    _commit(tmp_path / "cp", 1)
    refused(
        "run",
        ok_pipeline,
        "--store",
        str(tmp_path / "cp"),
        "--restore-from",
        "default/p/savepoints/sp-0000000009",
    ).result.assert_mistake("--restore-from default/p/savepoints/sp-0000000009 does not exist")


def test_restore_from_an_id_that_is_not_in_the_store(refused, ok_pipeline, tmp_path) -> None:
    store = tmp_path / "cp"
    _commit(store, 1)
    assert refused("run", ok_pipeline, "--store", str(store), "--restore-from", "42").sentence == (
        f"--restore-from 42: checkpoint 42 is not in {store.as_uri()}, job {JOB}: name one that "
        "exists (cjob checkpoints list shows them)"
    )


def test_restore_from_another_stores_checkpoint(refused, ok_pipeline, tmp_path) -> None:
    _commit(tmp_path / "other", 1)
    theirs = tmp_path / "other" / JOB / "checkpoints" / "chk-0000000001"
    mine = tmp_path / "cp"
    _commit(mine, 1)
    assert refused(
        "run", ok_pipeline, "--store", str(mine), "--restore-from", str(theirs)
    ).sentence == (
        f"--restore-from {theirs} is not in this job's store ({mine.as_uri()}, job {JOB}): "
        "restore it with the --store and --job of the job it belongs to"
    )


def test_restore_from_a_url_of_another_job(refused, ok_pipeline, tmp_path) -> None:
    mine = tmp_path / "cp"
    _commit(mine, 1)
    theirs = "s3://bucket/cp/team/other/checkpoints/chk-0000000001?endpoint=http://127.0.0.1:9"
    assert refused("run", ok_pipeline, "--store", str(mine), "--restore-from", theirs).sentence == (
        f"--restore-from {theirs} is not in this job's store ({mine.as_uri()}, job {JOB}): "
        "restore it with the --store and --job of the job it belongs to"
    )


def test_restore_from_a_checkpoint_that_never_completed(refused, ok_pipeline, tmp_path) -> None:
    store = object_store.open_object_store(str(tmp_path / "cp"))
    store.put(f"{JOB}/checkpoints/chk-0000000005/out/0.arrow", b"torn: never committed")
    sentence = refused(
        "run", ok_pipeline, "--store", str(tmp_path / "cp"), "--restore-from", "5"
    ).sentence
    assert sentence == (
        "--restore-from 5 is not a completed checkpoint: checkpoint 5 has no _metadata (it was "
        "never committed, or its commit was lost); restore a completed one (cjob checkpoints "
        "list shows them)"
    )


def test_restore_from_a_checkpoint_whose_state_is_gone(refused, ok_pipeline, tmp_path) -> None:
    _commit(tmp_path / "cp", 3, kind=types.CheckpointKind.SAVEPOINT)
    (tmp_path / "cp" / JOB / "savepoints" / "sp-0000000003" / "out" / "0.arrow").unlink()
    refused(
        "run", ok_pipeline, "--store", str(tmp_path / "cp"), "--restore-from", "sp-3"
    ).result.assert_mistake(
        "--restore-from sp-3 cannot be restored: 1 of its state objects are missing",
        "restore another one",
    )


def test_restore_from_a_checkpoint_of_another_max_parallelism(
    refused, ok_pipeline, tmp_path
) -> None:
    _commit(tmp_path / "cp", 2, max_parallelism=64)
    sentence = refused(
        "run", ok_pipeline, "--store", str(tmp_path / "cp"), "--restore-from", "2"
    ).sentence
    assert sentence == (
        "--restore-from 2 (checkpoint 2) was taken with max parallelism 64 but the pipeline p has "
        "128: its keyed state cannot be split differently; set Dataflow(..., max_parallelism=64), "
        "or start a new job (another --store and --job)"
    )


def test_the_latest_checkpoint_of_another_max_parallelism(refused, ok_pipeline, tmp_path) -> None:
    _commit(tmp_path / "cp", 2, max_parallelism=64)
    refused("run", ok_pipeline, "--store", str(tmp_path / "cp")).result.assert_mistake(
        f"the latest checkpoint (2) in {(tmp_path / 'cp').as_uri()}, job {JOB} was taken with "
        "max parallelism 64 but the pipeline p has 128"
    )


# -- the parallelism ----------------------------------------------------------------------


def test_parallelism_above_the_pipelines_max_parallelism(refused, ok_pipeline, tmp_path) -> None:
    sentence = refused("run", ok_pipeline, "--store", str(tmp_path / "cp"), "-p", "200").sentence
    assert sentence == (
        "--parallelism is 200 but the pipeline p has max parallelism 128 (its number of key "
        "groups): use at most 128, or raise max_parallelism in Dataflow(...) for a new job"
    )


def test_parallelism_above_the_local_masters_slots(refused, ok_pipeline, tmp_path) -> None:
    sentence = refused(
        "run", ok_pipeline, "--store", str(tmp_path / "cp"), "-p", "3", "--master", "local[2]"
    ).sentence
    assert sentence == (
        "--master local[2] has 2 task slot(s) but --parallelism is 3 (one slot per worker): use "
        "local[3] or a lower parallelism"
    )


# -- cjob driver: the job configuration's names ------------------------------------------


def _driver_doc(tmp_path: pathlib.Path, **changes: object) -> str:
    doc = {
        "pipeline": {"module": "barrier_runtime.demo", "args": ["--out", str(tmp_path / "out")]},
        "parallelism": 2,
        "storage": {"bucket": "cjob", "endpoint": (tmp_path / "s3").as_uri()},
        **changes,
    }
    path = tmp_path / "job.json"
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.mark.parametrize(
    ("changes", "sentence"),
    [
        pytest.param(
            {"restartPolicy": {"maxRestarts": -1}},
            "`restartPolicy.maxRestarts` in the job configuration must not be negative, got -1",
            id="max-restarts",
        ),
        pytest.param(
            {"restartPolicy": {"windowSeconds": 0}},
            "`restartPolicy.windowSeconds` in the job configuration must be a positive "
            "number, got 0",
            id="window",
        ),
        pytest.param(
            {"restartPolicy": {"backoff": {"jitter": 2}}},
            "`restartPolicy.backoff.jitter` in the job configuration must be between 0 "
            "and 1, got 2",
            id="jitter",
        ),
        pytest.param(
            {"checkpointing": {"intervalSeconds": 0}},
            "`checkpointing.intervalSeconds` in the job configuration must be a positive "
            "number (seconds between checkpoints), got 0",
            id="interval",
        ),
        pytest.param(
            {"checkpointing": {"retained": 0}},
            "`checkpointing.retained` in the job configuration must be at least 1, got 0",
            id="retained",
        ),
        pytest.param(
            {"control": {"port": 70000}},
            "`control.port` in the job configuration must be a TCP port from 0 to 65535 "
            "(0 picks a free one), got 70000",
            id="control-port",
        ),
        pytest.param(
            {"storage": {"bucket": "cjob", "endpoint": "minio:9000"}},
            "`storage.endpoint` in the job configuration is 'minio:9000': it must start "
            "with http:// or https:// (an S3 endpoint such as http://minio:9000) or "
            "file://",
            id="endpoint-without-scheme",
        ),
    ],
)
def test_bad_values_of_a_job_configuration(refused, tmp_path, changes, sentence) -> None:
    result = refused("driver", "--config", _driver_doc(tmp_path, **changes))
    assert (
        result.sentence == f"{sentence}: fix the CheckpointedJob spec (or the file) and start "
        "the driver again"
    )


def test_driver_restore_from_a_path_that_does_not_exist(refused, tmp_path) -> None:
    refused(
        "driver",
        "--config",
        _driver_doc(tmp_path),
        "--restore-from",
        str(tmp_path / "gone" / "sp-0000000004"),
    ).result.assert_mistake(f"--restore-from {tmp_path / 'gone' / 'sp-0000000004'} does not exist")


def test_a_valid_driver_gets_as_far_as_starting_spark(cjob, spark_starts, tmp_path) -> None:
    cjob("driver", "--config", _driver_doc(tmp_path))
    assert spark_starts == ["local[2]"]
