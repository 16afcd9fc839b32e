"""The job against its store and restore target is checked before Spark starts (issue 11, item 6).

A store that does not answer or refuses the credentials, and a restore target that
does not exist, never completed, lost its state or has another max parallelism:
each is one sentence and exit 2 before any SparkSession is built.
"""

from __future__ import annotations

import http.server
import socket
from collections.abc import Iterator

import http_fakes
import pytest
from stored_checkpoints import OK_PIPELINE_JOB as JOB
from stored_checkpoints import commit_ok_pipeline_checkpoint

from barrier_runtime.cli import preflight
from barrier_runtime.core import types
from barrier_runtime.storage import object_store

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
    commit_ok_pipeline_checkpoint(tmp_path / "cp", 1)
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
    commit_ok_pipeline_checkpoint(store, 1)
    assert refused("run", ok_pipeline, "--store", str(store), "--restore-from", "42").sentence == (
        f"--restore-from 42: checkpoint 42 is not in {store.as_uri()}, job {JOB}: name one that "
        "exists (cjob checkpoints list shows them)"
    )


def test_restore_from_another_stores_checkpoint(refused, ok_pipeline, tmp_path) -> None:
    commit_ok_pipeline_checkpoint(tmp_path / "other", 1)
    theirs = tmp_path / "other" / JOB / "checkpoints" / "chk-0000000001"
    mine = tmp_path / "cp"
    commit_ok_pipeline_checkpoint(mine, 1)
    assert refused(
        "run", ok_pipeline, "--store", str(mine), "--restore-from", str(theirs)
    ).sentence == (
        f"--restore-from {theirs} is not in this job's store ({mine.as_uri()}, job {JOB}): "
        "restore it with the --store and --job of the job it belongs to"
    )


def test_restore_from_a_url_of_another_job(refused, ok_pipeline, tmp_path) -> None:
    mine = tmp_path / "cp"
    commit_ok_pipeline_checkpoint(mine, 1)
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
    commit_ok_pipeline_checkpoint(tmp_path / "cp", 3, kind=types.CheckpointKind.SAVEPOINT)
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
    commit_ok_pipeline_checkpoint(tmp_path / "cp", 2, max_parallelism=64)
    sentence = refused(
        "run", ok_pipeline, "--store", str(tmp_path / "cp"), "--restore-from", "2"
    ).sentence
    assert sentence == (
        "--restore-from 2 (checkpoint 2) was taken with max parallelism 64 but the pipeline p has "
        "128: its keyed state cannot be split differently; set Dataflow(..., max_parallelism=64), "
        "or start a new job (another --store and --job)"
    )


def test_the_latest_checkpoint_of_another_max_parallelism(refused, ok_pipeline, tmp_path) -> None:
    commit_ok_pipeline_checkpoint(tmp_path / "cp", 2, max_parallelism=64)
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
