"""One round trip per ``/v1`` endpoint: the real control server writes, the clients read.

Each body is read with :mod:`barrier_runtime.control_document` through the very
clients users run: the operator's ``ControlClient`` (aiohttp) and the ``cjob``
CLI's (urllib). One demo job behind a real ``ControlServer`` serves the module;
the last test stops it with a savepoint through the operator's client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from control_api_steps import TOKEN, Running, finish, start, wait_finished

from barrier_runtime import control_document as contract
from barrier_runtime.cli import control_client as cli
from barrier_runtime.control.job import JobState
from barrier_runtime.core import types
from barrier_runtime.testing import TestingSink
from cjob_operator.act import control as operator
from cjob_operator.model.observation import EntryStatus


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory, make_client: Any) -> Iterator[Running]:
    running = start(
        TestingSink(),
        tmp_path_factory.mktemp("control-contract"),
        make_client,
        keys=20,
        events_per_key=None,
        partitions=2,
        batch_size=20,
        rate_per_partition=500,
    )
    yield running
    finish(running)


def _operator(job: Running) -> operator.ControlClient:
    return operator.ControlClient(job.server.url, TOKEN, timeout=30.0)


def test_get_job(job: Running) -> None:
    doc = cli.ControlClient(job.server.url, TOKEN).job()
    assert doc["api_version"] == contract.API_VERSION
    assert (doc["name"], doc["state"], doc["max_parallelism"]) == ("running-count", "RUNNING", 128)
    assert contract.parse_job(job.client.get("/v1/job").json)["ready"] is True
    view = asyncio.run(_operator(job).observe())
    assert view.error is None and view.ready and view.job_state == "RUNNING"


def test_post_and_get_checkpoints(job: Running) -> None:
    cid = asyncio.run(_operator(job).trigger(types.CheckpointKind.CHECKPOINT))
    entry = wait_finished(job.client, cid)
    assert entry["status"] == "completed" and entry["kind"] == "checkpoint"
    view = asyncio.run(_operator(job).observe())
    assert view.error is None
    seen = view.entry(cid)
    assert seen is not None and seen.status is EntryStatus.COMPLETED
    assert seen.path == entry["path"] and seen.completion_time == entry["completion_timestamp"]
    assert view.latest_completed is not None and view.latest_completed.id == cid
    assert view.latest_completed.size_bytes == entry["size"]
    overview = contract.parse_checkpoints(job.client.get("/v1/checkpoints").json)
    assert overview["counts"]["completed"] >= 1 and overview["next_id"] == cid + 1


def test_get_one_checkpoint(job: Running) -> None:
    entry = cli.ControlClient(job.server.url, TOKEN).savepoint(timeout=30)
    assert entry["kind"] == "savepoint" and entry["status"] == "completed"
    assert entry["path"] is not None and "savepoints/sp-" in entry["path"]
    again = contract.parse_entry(job.client.get(f"/v1/checkpoints/{entry['id']}").json)
    assert again == entry


def test_error_bodies(job: Running) -> None:
    missing = job.client.get("/v1/checkpoints/999999")
    refusal = contract.parse_error(missing.json)
    assert missing.status == 404 and refusal is not None
    assert refusal == {
        "api_version": contract.API_VERSION,
        "error": refusal["error"],
        "reason": "not-found",
    }
    with pytest.raises(cli.ControlRefusedError, match="refused the token"):
        cli.ControlClient(job.server.url, "wrong").job()


def test_post_stop(job: Running) -> None:
    path, sid = asyncio.run(_operator(job).stop_with_savepoint(60))
    assert "savepoints/sp-" in path
    entry = contract.parse_entry(job.client.get(f"/v1/checkpoints/{sid}").json)
    assert (entry["kind"], entry["status"], entry["path"]) == ("savepoint", "completed", path)
    job.thread.join(30)
    assert not job.thread.is_alive() and job.executor.info().state is JobState.STOPPED
    late = job.client.post("/v1/stop", {"savepoint": True})
    refusal = contract.parse_error(late.json)
    assert late.status == 409 and refusal is not None
    assert (refusal.get("reason"), refusal.get("state")) == ("job-not-running", "STOPPED")
    with pytest.raises(operator.ControlApiError, match=r"answered 409: .*the job is not running"):
        asyncio.run(_operator(job).trigger(types.CheckpointKind.CHECKPOINT))
