"""The control API server over real HTTP in front of a scripted job: the edges a live job
rarely shows (rejected triggers, a failing savepoint, a restarting job, statistics that
dip or fall out of the bounded history), plus the server's own lifecycle."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from barrier_runtime import control_document as contract
from barrier_runtime.checkpoint import outcomes, stats
from barrier_runtime.control.job import JobInfo, JobState, RuntimeMetrics, SavepointFailedError
from barrier_runtime.control.server import ControlServer, ControlServerError
from barrier_runtime.core.latency import LatencyHistogram
from barrier_runtime.core.types import CheckpointId, CheckpointKind, FailureReason

TOKEN = "another-t0ken"


def _entry(
    cid: int, status: str, reason: FailureReason | None = None, duration: float = 0.5
) -> stats.CheckpointStatsEntry:
    finished = status != "in-progress"
    return stats.CheckpointStatsEntry(
        checkpoint_id=CheckpointId(cid),
        status=stats.CheckpointStatus(status),
        kind=CheckpointKind.CHECKPOINT,
        trigger_time=1000.0 + cid,
        num_tasks=4,
        ack_times={},
        state_size=100 * cid,
        alignment_duration=0.01,
        end_time=1000.0 + cid + duration if finished else None,
        path=f"file:///cp/chk-{cid}" if status == "completed" else None,
        failure_reason=reason,
        failure_message="" if reason is None else f"failed: {reason.value}",
    )


def _stats(history: list[stats.CheckpointStatsEntry], **counts: int) -> stats.CheckpointStats:
    done = [e for e in history if e.status is stats.CheckpointStatus.COMPLETED]
    failed = [e for e in history if e.status is stats.CheckpointStatus.FAILED]
    running = [e for e in history if e.status is stats.CheckpointStatus.IN_PROGRESS]
    base = dict(
        triggered=len(history), in_progress=len(running), completed=len(done), failed=len(failed)
    )
    return stats.CheckpointStats(
        counts=stats.CheckpointCounts(**{**base, **counts}),
        history=tuple(sorted(history, key=lambda e: e.checkpoint_id, reverse=True)),
        latest_completed=max(done, key=lambda e: e.checkpoint_id, default=None),
        latest_failed=max(failed, key=lambda e: e.checkpoint_id, default=None),
        latest_in_progress=max(running, key=lambda e: e.checkpoint_id, default=None),
    )


@dataclass
class ScriptedJob:
    """A JobControl whose answers the test sets."""

    info_value: JobInfo = field(
        default_factory=lambda: JobInfo(
            name="scripted",
            state=JobState.RUNNING,
            attempt=0,
            restarts=0,
            parallelism=3,
            max_parallelism=64,
            start_time=1_700_000_000.0,
            ready=True,
        )
    )
    trigger_answer: outcomes.TriggerOutcome = field(
        default_factory=lambda: outcomes.TriggerOutcome.triggered(
            CheckpointId(7), CheckpointKind.CHECKPOINT
        )
    )
    stats_value: stats.CheckpointStats = field(default_factory=lambda: _stats([]))
    runtime: RuntimeMetrics = field(default_factory=RuntimeMetrics)
    stop_gate: threading.Event | None = None
    stop_error: str | None = None
    triggered: list[CheckpointKind] = field(default_factory=list)
    stop_entered: threading.Event = field(default_factory=threading.Event)

    def info(self) -> JobInfo:
        return self.info_value

    def trigger_checkpoint(self, kind: CheckpointKind) -> outcomes.TriggerOutcome:
        self.triggered.append(kind)
        return self.trigger_answer

    def checkpoint_stats(self) -> stats.CheckpointStats:
        return self.stats_value

    def stop_with_savepoint(self, timeout: float) -> outcomes.CheckpointOutcome:
        self.stop_entered.set()
        if self.stop_gate is not None:
            self.stop_gate.wait(timeout)
        if self.stop_error is not None:
            raise SavepointFailedError(self.stop_error)
        return outcomes.CheckpointOutcome(
            CheckpointId(9),
            CheckpointKind.SAVEPOINT,
            stats.CheckpointStatus.COMPLETED,
            path="file:///cp/savepoints/sp-0000000009",
        )

    def runtime_metrics(self) -> RuntimeMetrics:
        return self.runtime


@pytest.fixture
def scripted() -> ScriptedJob:
    return ScriptedJob()


@pytest.fixture
def served(scripted: ScriptedJob, make_client: Any) -> Iterator[Any]:
    with ControlServer(scripted, token=TOKEN, stop_timeout=5) as server:
        yield make_client(server.url, TOKEN)


def _scrape(client: Any) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    reply = client.get("/metrics")
    assert reply.status == 200, reply.text
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(reply.text):
        for sample in family.samples:
            labels = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "job"))
            out.setdefault(sample.name, {})[labels] = sample.value
    return out


# -- triggers ---------------------------------------------------------------------------


def test_accepted_trigger_is_202_with_id(served: Any, scripted: ScriptedJob) -> None:
    reply = served.post("/v1/checkpoints", {"kind": "savepoint"})
    assert reply.status == 202 and reply.json["id"] == 7
    assert scripted.triggered == [CheckpointKind.SAVEPOINT]


@pytest.mark.parametrize("reason", [FailureReason.TOO_MANY_PENDING, FailureReason.MIN_PAUSE])
def test_rejected_trigger_is_409_with_reason(
    served: Any, scripted: ScriptedJob, reason: FailureReason
) -> None:
    scripted.trigger_answer = outcomes.TriggerOutcome.rejected(
        CheckpointKind.CHECKPOINT, reason, "one checkpoint is already in flight"
    )
    reply = served.post("/v1/checkpoints", {"kind": "checkpoint"})
    assert reply.status == 409
    assert contract.parse_error(reply.json) == {
        "api_version": contract.API_VERSION,
        "error": "one checkpoint is already in flight",
        "reason": reason.value,
    }


def test_trigger_that_failed_at_once_names_its_id(served: Any, scripted: ScriptedJob) -> None:
    scripted.trigger_answer = outcomes.TriggerOutcome.failed(
        CheckpointId(8), CheckpointKind.CHECKPOINT, FailureReason.TASKS_NOT_RUNNING, "no tasks"
    )
    reply = served.post("/v1/checkpoints")
    assert reply.status == 503 and reply.json["id"] == 8
    assert reply.json["reason"] == "tasks-not-running"


@pytest.mark.parametrize(
    ("state", "ready", "status"),
    [
        (JobState.CREATED, False, 503),
        (JobState.RESTARTING, False, 503),
        (JobState.RUNNING, False, 503),
        (JobState.STOPPING, False, 409),
        (JobState.FINISHED, False, 409),
        (JobState.FAILED, False, 409),
    ],
)
def test_job_that_is_not_running_refuses_triggers_and_stops(
    served: Any, scripted: ScriptedJob, state: JobState, ready: bool, status: int
) -> None:
    scripted.info_value = replace(scripted.info_value, state=state, ready=ready)
    for path, body in [("/v1/checkpoints", {"kind": "checkpoint"}), ("/v1/stop", {})]:
        reply = served.post(path, body)
        assert reply.status == status, (path, reply.text)
        assert reply.json["reason"] == "job-not-running" and reply.json["state"] == state.value
        assert ("Retry-After" in reply.headers) == (status == 503)
    assert scripted.triggered == []
    assert served.get("/readyz", auth=None).status == 503
    assert served.get("/healthz", auth=None).status == 200


# -- stop -------------------------------------------------------------------------------


def test_stop_returns_savepoint_id_and_path(served: Any) -> None:
    reply = served.post("/v1/stop", {"savepoint": True})
    assert reply.status == 200
    assert contract.parse_stopped(reply.json) == {
        "api_version": contract.API_VERSION,
        "id": 9,
        "kind": "savepoint",
        "status": "completed",
        "path": "file:///cp/savepoints/sp-0000000009",
    }


def test_failed_savepoint_is_500_with_its_message(served: Any, scripted: ScriptedJob) -> None:
    scripted.stop_error = "stop-with-savepoint failed, job keeps running: timeout"
    reply = served.post("/v1/stop", {"savepoint": True})
    assert reply.status == 500
    assert contract.parse_error(reply.json) == {
        "api_version": contract.API_VERSION,
        "error": "stop-with-savepoint failed, job keeps running: timeout",
        "reason": "savepoint-failed",
    }


def test_second_stop_while_one_runs_is_409_and_probes_stay_responsive(
    served: Any, scripted: ScriptedJob
) -> None:
    scripted.stop_gate = threading.Event()
    first: list[Any] = []
    caller = threading.Thread(target=lambda: first.append(served.post("/v1/stop", {})))
    caller.start()
    try:
        assert scripted.stop_entered.wait(5)
        second = served.post("/v1/stop", {"savepoint": True})
        assert second.status == 409 and second.json["reason"] == "stopping"
        t0 = time.monotonic()
        assert served.get("/healthz").status == 200 and served.get("/v1/job").status == 200
        assert time.monotonic() - t0 < 1
    finally:
        scripted.stop_gate.set()
        caller.join(5)
    assert first[0].status == 200


# -- metrics ----------------------------------------------------------------------------


def test_checkpoint_counters_never_go_down(served: Any, scripted: ScriptedJob) -> None:
    scripted.runtime = RuntimeMetrics({"count": 100}, {"events": 100}, {"events": 0.5})
    scripted.stats_value = _stats(
        [
            _entry(1, "completed"),
            _entry(2, "failed", FailureReason.TIMEOUT),
            _entry(3, "in-progress"),
        ]
    )
    first = _scrape(served)
    assert first["cjob_checkpoints_completed_total"] == {(): 1}
    assert first["cjob_checkpoints_failed_total"] == {(("reason", "timeout"),): 1}
    assert first["cjob_checkpoints_in_progress"] == {(): 1}
    assert first["cjob_checkpoint_duration_seconds_count"] == {(): 1}
    assert first["cjob_last_completed_checkpoint_id"] == {(): 1}

    # 3 completed; 4 and 5 failed and fell out of the history along with 1 and 2;
    # the job's live counters dipped (a restart is folding them into its totals).
    scripted.runtime = RuntimeMetrics({"count": 40}, {"events": 40}, {"events": 0.1})
    scripted.stats_value = _stats(
        [_entry(3, "completed", duration=2.0), _entry(6, "failed", FailureReason.DECLINED)],
        triggered=6,
        completed=2,
        failed=4,
    )
    second = _scrape(served)
    assert second["cjob_checkpoints_completed_total"] == {(): 2}
    assert second["cjob_checkpoints_failed_total"] == {
        (("reason", "timeout"),): 1,
        (("reason", "declined"),): 1,
        (("reason", "unknown"),): 2,
    }
    assert second["cjob_checkpoint_duration_seconds_count"] == {(): 2}
    assert second["cjob_checkpoint_duration_seconds_sum"] == {(): pytest.approx(2.5)}
    assert second["cjob_records_in_total"] == {(("step", "count"),): 100}
    assert second["cjob_backpressure_seconds_total"] == {(("task", "events"),): 0.5}
    assert second["cjob_checkpoints_triggered_total"] == {(): 6}

    third = _scrape(served)  # the same statistics again: nothing is counted twice
    for name in (
        "cjob_checkpoints_completed_total",
        "cjob_checkpoints_failed_total",
        "cjob_checkpoint_duration_seconds_count",
    ):
        assert third[name] == second[name], name


def test_sink_latency_histograms_are_exported_per_step(served: Any, scripted: ScriptedJob) -> None:
    arrival = LatencyHistogram.of_seconds([0.004, 0.004, 0.03])
    commit = LatencyHistogram.of_seconds([0.6, 0.7, 0.9])
    scripted.runtime = RuntimeMetrics(
        arrival_latency={"out": arrival}, commit_latency={"out": commit}
    )
    samples = _scrape(served)
    step = (("step", "out"),)
    assert samples["cjob_sink_arrival_latency_seconds_count"] == {step: 3}
    assert samples["cjob_sink_arrival_latency_seconds_sum"][step] == pytest.approx(0.038)
    buckets = samples["cjob_sink_arrival_latency_seconds_bucket"]
    assert buckets[(("le", "0.005"), *step)] == 2 and buckets[(("le", "0.05"), *step)] == 3
    assert samples["cjob_sink_commit_latency_seconds_bucket"][(("le", "0.5"), *step)] == 0
    assert samples["cjob_sink_commit_latency_seconds_bucket"][(("le", "1"), *step)] == 3

    # a restart is folding the live attempt's histograms into the totals: they dip
    scripted.runtime = RuntimeMetrics(arrival_latency={"out": LatencyHistogram.of_seconds([2.0])})
    again = _scrape(served)
    assert again["cjob_sink_arrival_latency_seconds_count"] == {step: 4}
    assert again["cjob_sink_arrival_latency_seconds_bucket"][(("le", "0.005"), *step)] == 2


def test_metrics_without_checkpoints_omit_the_last_checkpoint_gauges(served: Any) -> None:
    samples = _scrape(served)
    assert "cjob_last_completed_checkpoint_id" not in samples
    assert samples["cjob_checkpoints_completed_total"] == {(): 0}
    assert samples["cjob_job_info"] == {(("state", "RUNNING"),): 1}
    assert samples["cjob_job_up"] == {(): 1}


def test_job_name_and_namespace_label_every_series(scripted: ScriptedJob, make_client: Any) -> None:
    with ControlServer(scripted, token=TOKEN, namespace="prod", job_name="orders") as server:
        text = make_client(server.url, TOKEN).get("/metrics").text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            assert sample.labels["job"] == "orders" and sample.labels["namespace"] == "prod"


# -- transport --------------------------------------------------------------------------


def test_oversized_body_is_413(served: Any) -> None:
    reply = served.post("/v1/checkpoints", raw=b" " * (64 * 1024 + 1))
    assert reply.status == 413 and reply.json["reason"] == "too-large"


def test_head_and_options_are_405(served: Any) -> None:
    for method in ("HEAD", "OPTIONS"):
        assert served.call(method, "/v1/job").status == 405


def test_malformed_request_line_gets_a_json_400(served: Any) -> None:
    host, port = served.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as conn:
        conn.sendall(b"GET /v1/job extra HTTP/1.0\r\n\r\n")
        answer = conn.recv(4096).decode()
    assert answer.startswith("HTTP/1.0 400") and "application/json" in answer


def test_no_token_means_no_authentication(scripted: ScriptedJob, make_client: Any) -> None:
    with ControlServer(scripted) as server:
        assert make_client(server.url, None).get("/v1/job").json["name"] == "scripted"


def test_empty_token_is_refused() -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        ControlServer(ScriptedJob(), token=" ")


def test_the_token_is_never_logged(
    scripted: ScriptedJob, make_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with ControlServer(scripted, token=TOKEN) as server:
        client = make_client(server.url, TOKEN)
        client.get("/v1/job")
        client.get("/v1/job", auth="Bearer not-the-token")
        client.post("/v1/checkpoints", raw=b"{broken")
        assert TOKEN not in repr(server)
    assert caplog.records, "the server logs something at DEBUG"
    assert TOKEN not in caplog.text and "not-the-token" not in caplog.text


# -- lifecycle --------------------------------------------------------------------------


def test_stop_is_prompt_even_with_a_request_in_flight(
    scripted: ScriptedJob, make_client: Any
) -> None:
    scripted.stop_gate = threading.Event()
    server = ControlServer(scripted, token=TOKEN).start()
    client = make_client(server.url, TOKEN)
    caller = threading.Thread(target=lambda: client.post("/v1/stop", {}), daemon=True)
    caller.start()
    assert scripted.stop_entered.wait(5), "the stop request never reached the job"
    t0 = time.monotonic()
    server.stop()
    assert time.monotonic() - t0 < 1
    assert not server.running
    server.stop()  # idempotent
    scripted.stop_gate.set()
    with pytest.raises(ControlServerError, match="not started"):
        _ = server.port


def test_port_in_use_is_a_clear_error(scripted: ScriptedJob) -> None:
    with ControlServer(scripted) as first:
        clash = ControlServer(scripted, port=first.port)
        with pytest.raises(ControlServerError, match=f"127.0.0.1:{first.port}.*another port"):
            clash.start()


def test_url_and_port_after_start(scripted: ScriptedJob) -> None:
    server = ControlServer(scripted, port=0)
    assert repr(server) == "ControlServer(not started)"
    with server:
        assert server.port > 0 and server.url == f"http://127.0.0.1:{server.port}"
        assert server.start() is server  # idempotent
