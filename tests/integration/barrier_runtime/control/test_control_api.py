"""The control API over real HTTP in front of a real LocalExecutor running the demo job.

One job runs for the whole module (periodic checkpoints effectively off, so
every checkpoint here is one a test asked for); the stop-with-savepoint test
runs its own job and resumes it from the savepoint the API returned.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator
from typing import Any

import pytest
import waiting
from control_api_steps import (
    NAMESPACE,
    TOKEN,
    Running,
    accepted,
    finish,
    one,
    scrape,
    start,
    trigger,
    wait_finished,
)

from barrier_runtime import control_document as contract
from barrier_runtime.control.job import JobState
from barrier_runtime.demo import running_count_flow
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor, TestingSink, check_exactly_once

ENTRY_KEYS = {
    "id",
    "status",
    "kind",
    "trigger_timestamp",
    "latest_ack_timestamp",
    "completion_timestamp",
    "failure_timestamp",
    "duration",
    "size",
    "uploaded_size",
    "alignment_duration",
    "path",
    "failure_reason",
    "failure_message",
    "acknowledged",
    "tasks",
}
PROTECTED = [
    ("GET", "/v1/job", None),
    ("GET", "/v1/checkpoints", None),
    ("GET", "/v1/checkpoints/1", None),
    ("POST", "/v1/checkpoints", {"kind": "checkpoint"}),
    ("POST", "/v1/stop", {"savepoint": True}),
    ("GET", "/no/such/path", None),
]


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory, make_client: Any) -> Iterator[Running]:
    running = start(
        TestingSink(),
        tmp_path_factory.mktemp("control-api"),
        make_client,
        keys=50,
        events_per_key=None,
        partitions=2,
        batch_size=50,
        rate_per_partition=2000,
    )
    yield running
    finish(running)


# -- probes and auth ----------------------------------------------------------------------


def test_probes_are_open_without_a_token(job: Running) -> None:
    health = job.client.get("/healthz", auth=None)
    assert (health.status, health.json) == (200, {"status": "ok"})
    assert health.headers["Content-Type"] == "application/json"
    ready = job.client.get("/readyz", auth=None)
    assert ready.status == 200 and ready.json["state"] == "RUNNING"
    scrape = job.client.get("/metrics", auth=None)
    assert scrape.status == 200 and "cjob_job_up" in scrape.text
    assert "cjob_job_startup_seconds{" in scrape.text
    assert TOKEN not in scrape.text


@pytest.mark.parametrize(
    "authorization",
    [None, f"Basic {TOKEN}", "Bearer wrong-token", f"Bearer {TOKEN}x", "Bearer"],
    ids=["missing", "wrong-scheme", "wrong-token", "token-prefix", "empty-bearer"],
)
@pytest.mark.parametrize(("method", "path", "body"), PROTECTED, ids=str)
def test_protected_endpoints_refuse_bad_credentials(
    job: Running, method: str, path: str, body: Any, authorization: str | None
) -> None:
    reply = job.client.call(method, path, body, auth=authorization)
    assert reply.status == 401, reply.text
    assert reply.headers["Content-Type"] == "application/json"
    assert reply.headers["WWW-Authenticate"].startswith('Bearer realm="cjob"')
    assert reply.json["error"] and TOKEN not in reply.text
    assert job.executor.info().state is JobState.RUNNING, "a refused stop must not stop"


def test_lower_case_bearer_scheme_is_accepted(job: Running) -> None:
    assert job.client.get("/v1/job", auth=f"bearer {TOKEN}").status == 200


# -- job --------------------------------------------------------------------------------


def test_job_describes_the_running_job(job: Running) -> None:
    reply = job.client.get("/v1/job")
    assert reply.status == 200
    doc = contract.parse_job(reply.json)
    assert doc["name"] == "running-count"
    assert (doc["state"], doc["attempt"], doc["restarts"]) == ("RUNNING", 0, 0)
    assert (doc["parallelism"], doc["max_parallelism"]) == (2, 128)
    assert doc["ready"] is True and doc["restored_from"] is None and doc["failure"] is None
    assert 0 < doc["startup_seconds"] < 60  # the attempt's start to every subtask running
    started = datetime.datetime.fromisoformat(doc["start_time"].replace("Z", "+00:00"))
    assert abs(started.timestamp() - doc["start_timestamp"]) < 1e-3
    assert 0 < time.time() - doc["start_timestamp"] < 600
    assert "default/api" in doc["storage"]


# -- checkpoints ------------------------------------------------------------------------


def test_triggered_checkpoint_is_reported_completed(job: Running) -> None:
    entry = trigger(job.client)
    assert set(entry) == ENTRY_KEYS | {"api_version"}
    assert entry["status"] == "completed" and entry["kind"] == "checkpoint"
    assert entry["path"] and "checkpoints/chk-" in entry["path"]
    assert entry["completion_timestamp"] >= entry["trigger_timestamp"]
    assert entry["duration"] == pytest.approx(
        entry["completion_timestamp"] - entry["trigger_timestamp"]
    )
    assert entry["size"] > 0 and entry["failure_reason"] is None
    assert entry["acknowledged"] == entry["tasks"] > 0

    doc = job.client.get("/v1/checkpoints").json
    assert set(doc) >= {"counts", "latest", "history", "consecutive_failures"}
    assert set(doc["counts"]) >= {"triggered", "in_progress", "completed", "failed"}
    assert doc["counts"]["completed"] >= 1 and doc["consecutive_failures"] == 0
    assert set(doc["latest"]) == {"completed", "failed", "savepoint", "in_progress"}
    assert doc["latest"]["completed"]["id"] >= entry["id"]
    listed = {k: v for k, v in entry.items() if k != "api_version"}  # the list's version
    assert listed in doc["history"]
    assert all(set(h) == ENTRY_KEYS for h in doc["history"])
    assert [h["id"] for h in doc["history"]] == sorted(
        (h["id"] for h in doc["history"]), reverse=True
    )


def test_savepoint_through_the_checkpoints_endpoint(job: Running) -> None:
    entry = trigger(job.client, "savepoint")
    assert entry["status"] == "completed" and entry["kind"] == "savepoint"
    assert "savepoints/sp-" in entry["path"]
    latest = job.client.get("/v1/checkpoints").json["latest"]
    assert latest["savepoint"]["id"] == entry["id"]
    assert job.executor.info().state is JobState.RUNNING, "a savepoint alone does not stop"


def test_unknown_checkpoint_is_404_and_bad_id_is_400(job: Running) -> None:
    missing = job.client.get("/v1/checkpoints/999999")
    assert missing.status == 404 and "999999" in missing.json["error"]
    bad = job.client.get("/v1/checkpoints/latest")
    assert bad.status == 400 and bad.json["reason"] == "bad-id"


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (b"{not json", "not valid JSON"),
        (b'["checkpoint"]', "JSON object"),
        (b'{"kind": "snapshot"}', '"kind" must be'),
        (b'{"kind": 1}', '"kind" must be'),
        (b'{"knid": "savepoint"}', 'unknown field(s) "knid"'),
    ],
)
def test_bad_trigger_bodies_are_400_with_one_clear_message(
    job: Running, raw: bytes, needle: str
) -> None:
    before = job.client.get("/v1/checkpoints").json["counts"]["triggered"]
    reply = job.client.post("/v1/checkpoints", raw=raw)
    assert reply.status == 400 and reply.headers["Content-Type"] == "application/json"
    assert needle in reply.json["error"] and "\n" not in reply.json["error"]
    assert job.client.get("/v1/checkpoints").json["counts"]["triggered"] == before


def test_empty_trigger_body_means_checkpoint(job: Running) -> None:
    reply = accepted(job.client, raw=b"")  # another test's checkpoint may still be in flight
    assert reply.status == 202 and reply.json["kind"] == "checkpoint"
    assert wait_finished(job.client, reply.json["id"])["status"] == "completed"


# -- stop (refusals only: the module's job keeps running) ---------------------------------


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({"savepoint": False}, 400, "stop without savepoint is not supported"),
        ({"savepoint": "yes"}, 400, '"savepoint" must be true or false'),
        ({"savepoint": True, "timeout": -1}, 400, '"timeout" must be a positive number'),
        ({"drain": True}, 400, 'unknown field(s) "drain"'),
    ],
)
def test_stop_refuses_what_it_cannot_do(job: Running, body: Any, status: int, needle: str) -> None:
    reply = job.client.post("/v1/stop", body)
    assert reply.status == status and needle in reply.json["error"], reply.text
    assert job.executor.info().state is JobState.RUNNING


# -- routing ----------------------------------------------------------------------------


def test_unknown_path_is_404_and_wrong_method_is_405(job: Running) -> None:
    missing = job.client.get("/v2/job")
    assert missing.status == 404 and missing.headers["Content-Type"] == "application/json"
    for method, path, allow in [
        ("DELETE", "/v1/job", "GET"),
        ("GET", "/v1/stop", "POST"),
        ("PUT", "/v1/checkpoints", "GET, POST"),
        ("POST", "/healthz", "GET"),
    ]:
        reply = job.client.call(method, path, {})
        assert reply.status == 405, (method, path, reply.text)
        assert reply.headers["Allow"] == allow and reply.json["error"]


def test_trailing_slash_and_query_string_are_ignored(job: Running) -> None:
    assert job.client.get("/v1/job/?pretty=1").json["state"] == "RUNNING"


# -- metrics ----------------------------------------------------------------------------


def test_metrics_count_checkpoints_and_records(job: Running) -> None:
    before = scrape(job.client)
    assert one(before, "cjob_job_up") == 1
    assert one(before, "cjob_job_info", state="RUNNING") == 1
    assert one(before, "cjob_job_restarts_total") == 0
    in_before = one(before, "cjob_records_in_total", step="count")
    completed_before = one(before, "cjob_checkpoints_completed_total")
    observed_before = one(before, "cjob_checkpoint_duration_seconds_count")

    entry = trigger(job.client)

    def more_records_in() -> Any:
        scraped = scrape(job.client)
        return scraped if one(scraped, "cjob_records_in_total", step="count") > in_before else None

    after = waiting.wait_until(more_records_in, 10, "more records counted in")
    assert one(after, "cjob_checkpoints_completed_total") >= completed_before + 1
    assert one(after, "cjob_checkpoint_duration_seconds_count") >= observed_before + 1
    assert one(after, "cjob_checkpoint_duration_seconds_bucket", le="+Inf") == one(
        after, "cjob_checkpoint_duration_seconds_count"
    )
    assert one(after, "cjob_records_in_total", step="count") > in_before
    assert one(after, "cjob_records_out_total", step="events") > 0
    assert set(dict(k)["task"] for k in after["cjob_backpressure_seconds_total"]) >= {"events"}
    assert one(after, "cjob_last_completed_checkpoint_id") >= entry["id"]
    assert (
        one(after, "cjob_last_completed_checkpoint_timestamp_seconds")
        >= entry["completion_timestamp"] - 1e-6
    )
    assert one(after, "cjob_last_checkpoint_size_bytes") > 0
    assert one(after, "cjob_last_checkpoint_duration_seconds") >= 0
    assert one(after, "cjob_last_checkpoint_alignment_seconds") >= 0
    assert one(after, "cjob_checkpoints_in_progress") in (0, 1)
    assert after.get("cjob_checkpoints_failed_total", {}) == {} or all(
        v >= 0 for v in after["cjob_checkpoints_failed_total"].values()
    )
    for name, series in after.items():
        for labels in series:
            assert dict(labels)["job"] == "running-count", name
            assert dict(labels)["namespace"] == NAMESPACE, name


def test_metrics_speak_openmetrics_when_asked(job: Running) -> None:
    reply = job.client.get("/metrics", headers={"Accept": "application/openmetrics-text"})
    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith("application/openmetrics-text")
    assert reply.text.rstrip().endswith("# EOF")


# -- stop with savepoint, then resume ---------------------------------------------------


def test_stop_returns_a_savepoint_a_new_job_resumes_exactly_once(
    tmp_path: Any, make_client: Any
) -> None:
    shape = dict(keys=50, events_per_key=200, partitions=2, batch_size=50)
    clean = TestingSink()
    LocalExecutor(
        running_count_flow(clean, **shape),
        parallelism=2,
        store=CheckpointStore(open_object_store(str(tmp_path / "clean")), "default/clean"),
    ).run()

    sink = TestingSink()
    first = start(sink, tmp_path / "cp", make_client, **shape, rate_per_partition=1000)
    try:

        def published() -> list[Any]:
            if not sink.output:
                assert trigger(first.client)["status"] == "completed"  # publishes output
            return sink.output

        waiting.wait_until(published, 10, "output published by a checkpoint", interval=0)
        stop = first.client.post("/v1/stop", {"savepoint": True, "timeout": 30})
        assert stop.status == 200, stop.text
        assert set(stop.json) >= {"id", "path"} and "savepoints/sp-" in stop.json["path"]
        first.thread.join(30)
        assert not first.thread.is_alive()
        assert first.results[0].stopped_with_savepoint == stop.json["path"]

        assert first.client.get("/v1/job").json["state"] == "STOPPED"
        assert first.client.get("/readyz", auth=None).status == 503
        late = first.client.post("/v1/checkpoints", {"kind": "checkpoint"})
        assert late.status == 409 and late.json["reason"] == "job-not-running", late.text
        again = first.client.post("/v1/stop", {"savepoint": True})
        assert again.status == 409 and again.json["reason"] == "job-not-running"
        assert one(scrape(first.client), "cjob_job_up") == 0
    finally:
        finish(first)
    published = len(sink.output)
    assert 0 < published < len(clean.output), "stopped midway"

    resumed = LocalExecutor(
        running_count_flow(sink, **shape),
        parallelism=2,
        store=CheckpointStore(open_object_store(str(tmp_path / "cp")), "default/api"),
        restore_from=stop.json["path"],
    )
    result = resumed.run()
    assert result.restored_from == [stop.json["id"]]
    report = check_exactly_once(clean.output, sink.output)
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0), report
