"""``cjob stop`` and ``cjob savepoint`` against a real control API server over a scripted job.

The server is the real one (HTTP on loopback, bearer token); the job behind it
answers what each test scripts and records what it was asked. Which job: the
one ``--url`` names, or the ``cjob run`` published in the jobs directory.
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import http_fakes
import pytest

from barrier_runtime.checkpoint import outcomes, stats
from barrier_runtime.cli import local_jobs
from barrier_runtime.control.job import JobInfo, JobState, RuntimeMetrics, SavepointFailedError
from barrier_runtime.control.server import ControlServer
from barrier_runtime.core.types import CheckpointId, CheckpointKind, FailureReason

TOKEN = "s3cret-t0ken"
SAVEPOINT_PATH = "default/orders/savepoints/sp-0000000012"


def _entry(
    cid: int, status: str, reason: FailureReason | None = None
) -> stats.CheckpointStatsEntry:
    done = status != "in-progress"
    return stats.CheckpointStatsEntry(
        checkpoint_id=CheckpointId(cid),
        status=stats.CheckpointStatus(status),
        kind=CheckpointKind.SAVEPOINT,
        trigger_time=1000.0,
        num_tasks=2,
        ack_times={},
        state_size=10,
        alignment_duration=0.0,
        end_time=1001.0 if done else None,
        path=SAVEPOINT_PATH if status == "completed" else None,
        failure_reason=reason,
        failure_message="" if reason is None else f"a task declined: {reason.value}",
    )


def _stats(entry: stats.CheckpointStatsEntry) -> stats.CheckpointStats:
    return stats.CheckpointStats(
        counts=stats.CheckpointCounts(triggered=1, in_progress=0, completed=0, failed=0),
        history=(entry,),
        latest_completed=None,
        latest_failed=None,
        latest_in_progress=None,
    )


@dataclass
class ScriptedJob:
    """A JobControl answering from a script and recording the requests."""

    state: JobState = JobState.RUNNING
    busy_triggers: int = 0
    """How many triggers are refused as too-many-pending before one is accepted."""
    polls_in_progress: int = 2
    """How many polls see the savepoint in progress before it ends."""
    savepoint_ends: str = "completed"
    stop_error: str | None = None
    triggered: list[CheckpointKind] = field(default_factory=list)
    stops: list[float] = field(default_factory=list)
    polls: int = 0

    def info(self) -> JobInfo:
        return JobInfo(
            name="orders",
            state=self.state,
            attempt=0,
            restarts=0,
            parallelism=2,
            max_parallelism=128,
            start_time=1.0,
            ready=True,
        )

    def trigger_checkpoint(self, kind: CheckpointKind) -> outcomes.TriggerOutcome:
        self.triggered.append(kind)
        if len(self.triggered) <= self.busy_triggers:
            return outcomes.TriggerOutcome.rejected(
                kind, FailureReason.TOO_MANY_PENDING, "a checkpoint is already in flight"
            )
        return outcomes.TriggerOutcome.triggered(CheckpointId(12), kind)

    def checkpoint_stats(self) -> stats.CheckpointStats:
        self.polls += 1
        if self.polls <= self.polls_in_progress:
            return _stats(_entry(12, "in-progress"))
        reason = FailureReason.DECLINED if self.savepoint_ends == "failed" else None
        return _stats(_entry(12, self.savepoint_ends, reason))

    def stop_with_savepoint(self, timeout: float) -> outcomes.CheckpointOutcome:
        self.stops.append(timeout)
        if self.stop_error is not None:
            raise SavepointFailedError(self.stop_error)
        self.state = JobState.STOPPED
        return outcomes.CheckpointOutcome(
            CheckpointId(12),
            CheckpointKind.SAVEPOINT,
            stats.CheckpointStatus.COMPLETED,
            path=SAVEPOINT_PATH,
        )

    def runtime_metrics(self) -> RuntimeMetrics:
        return RuntimeMetrics()


@pytest.fixture
def job() -> ScriptedJob:
    return ScriptedJob()


@pytest.fixture
def api(job: ScriptedJob) -> Iterator[str]:
    with ControlServer(job, token=TOKEN, stop_timeout=30) as server:
        yield server.url


@pytest.fixture
def published(api: str, jobs_dir) -> local_jobs.LocalJob:
    """``api`` published as a local ``cjob run`` of default/orders (this process stands in)."""
    record = local_jobs.LocalJob(os.getpid(), "default/orders", api, TOKEN, None, "file:///s", 1.0)
    assert local_jobs.publish(record) is not None
    return record


# -- stop -----------------------------------------------------------------------------------


def test_stop_takes_a_final_savepoint(cjob, job, published) -> None:
    result = cjob("stop")
    assert result.code == 0, result.err
    assert job.stops and job.state is JobState.STOPPED
    assert result.out.strip() == (
        f"stopped job default/orders with savepoint 12 at {SAVEPOINT_PATH} (the next cjob run of "
        "this job resumes from it, or --restore-from 12)"
    )


def test_stop_with_url_and_token_file_in_json(cjob, job, api, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("CJOB_CONTROL_TOKEN", raising=False)
    (tmp_path / "token").write_text(TOKEN + "\n")
    result = cjob(
        "stop",
        "--savepoint",
        "--url",
        api,
        "--token-file",
        str(tmp_path / "token"),
        "--timeout",
        "20",
        "--json",
    )
    assert result.code == 0, result.err
    assert json.loads(result.out) == {
        "event": "stopped",
        "job": "orders",
        "id": 12,
        "path": SAVEPOINT_PATH,
    }
    assert job.stops == [20.0]


def test_stop_whose_savepoint_fails_is_exit_1_and_the_job_keeps_running(
    cjob, job, published
) -> None:
    job.stop_error = "a task declined the savepoint"
    result = cjob("stop")
    assert result.code == 1
    assert result.lines[0] == (
        f"cjob: failed: the job at {published.url} could not take its final savepoint and keeps "
        "running: a task declined the savepoint"
    )
    assert job.state is JobState.RUNNING


def test_stop_of_a_job_that_is_over(cjob, job, published) -> None:
    job.state = JobState.FINISHED
    cjob("stop").assert_mistake(
        f"the job at {published.url} refused: cannot stop with a savepoint: the job is not "
        "running (state FINISHED)"
    )


# -- savepoint ------------------------------------------------------------------------------


def test_savepoint_waits_until_it_completed(cjob, job, published) -> None:
    job.busy_triggers = 2  # a periodic checkpoint is in flight: asked again
    result = cjob("savepoint")
    assert result.code == 0, result.err
    assert result.out.strip() == f"savepoint 12 of job default/orders completed: {SAVEPOINT_PATH}"
    assert job.triggered == [CheckpointKind.SAVEPOINT] * 3
    assert job.polls == 3 and job.state is JobState.RUNNING


def test_savepoint_in_json(cjob, job, published) -> None:
    result = cjob("savepoint", "--json")
    assert json.loads(result.out) == {
        "event": "savepoint",
        "job": "default/orders",
        "id": 12,
        "path": SAVEPOINT_PATH,
    }


def test_a_savepoint_that_fails_is_exit_1(cjob, job, published) -> None:
    job.savepoint_ends = "failed"
    result = cjob("savepoint", "--json")
    assert result.code == 1
    assert result.lines[0] == (
        f"cjob: failed: savepoint 12 of the job at {published.url} failed: a task declined: "
        "declined"
    )
    event = json.loads(result.out.splitlines()[-1])
    assert (event["event"], event["kind"], event["exit_code"]) == ("error", "failed", 1)


def test_a_savepoint_that_does_not_complete_in_time(cjob, job, published) -> None:
    job.polls_in_progress = 10**9
    result = cjob("savepoint", "--timeout", "0.5")
    assert result.code == 1
    assert "savepoint 12 of the job at" in result.lines[0]
    assert "did not complete within 0.5s" in result.lines[0]


# -- finding the job and its token ---------------------------------------------------------


def test_nothing_published(cjob, jobs_dir) -> None:
    sentence = cjob("stop").assert_mistake()
    assert sentence == (
        f"no cjob run is running on this machine (none published in {jobs_dir}): start one with "
        "cjob run, or pass --url of the job's control API"
    )


def test_a_record_of_a_process_that_is_gone_is_ignored_and_removed(cjob, jobs_dir) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    record = local_jobs.LocalJob(
        int(gone.stdout), "default/orders", "http://127.0.0.1:9", "t", None, "s", 1.0
    )
    path = local_jobs.publish(record)
    cjob("savepoint").assert_mistake("no cjob run is running on this machine")
    assert path is not None and not path.exists()


def test_several_jobs_need_a_choice(cjob, api, published) -> None:
    other = replace(published, pid=os.getppid(), job="team/other", started=2.0)
    local_jobs.publish(other)
    cjob("stop").assert_mistake(
        "2 jobs run on this machine",
        "default/orders",
        "team/other",
        "choose one with --job or --url",
    )
    result = cjob("savepoint", "--job", "default/orders")
    assert result.code == 0, result.err


def test_an_unknown_job_name(cjob, published) -> None:
    cjob("stop", "--job", "team/nope").assert_mistake("no cjob run of job team/nope is running")


def test_nothing_answers_at_the_url(cjob) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    sentence = cjob("stop", "--url", url).assert_mistake()
    assert sentence == (
        f"nothing answers at {url} (connection refused): is the job still running? (cjob run "
        "serves its control API while it runs; check --url)"
    )


def test_a_wrong_token_is_refused(cjob, job, api, monkeypatch) -> None:
    monkeypatch.setenv("CJOB_CONTROL_TOKEN", "not-the-token")
    sentence = cjob("stop", "--url", api).assert_mistake()
    assert sentence == (
        f"the control API at {api} refused the token (invalid bearer token): pass --token-file "
        "FILE or set $CJOB_CONTROL_TOKEN to the job's token"
    )
    assert job.stops == []


def test_the_token_from_the_environment_is_used(cjob, job, api, monkeypatch) -> None:
    monkeypatch.setenv("CJOB_CONTROL_TOKEN", TOKEN)
    assert cjob("savepoint", "--url", api).code == 0


class _QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        return None


def test_a_url_that_is_not_a_control_api(cjob, tmp_path) -> None:
    with http_fakes.serving(_QuietFiles) as url:
        cjob("stop", "--url", url).assert_mistake(f"{url} is not a cjob control API")


def test_a_missing_token_file(cjob, api, tmp_path) -> None:
    cjob("stop", "--url", api, "--token-file", str(tmp_path / "nope")).assert_mistake(
        f"cannot read --token-file {tmp_path / 'nope'} (No such file or directory)"
    )


# -- what cjob run publishes ----------------------------------------------------------------


def test_records_are_private_and_withdrawn(jobs_dir) -> None:
    record = local_jobs.LocalJob(os.getpid(), "default/p", "http://x", "t", None, "s", time.time())
    path = local_jobs.publish(record)
    assert path is not None
    assert (path.stat().st_mode & 0o777, jobs_dir.stat().st_mode & 0o777) == (0o600, 0o700)
    assert local_jobs.running() == [record]
    local_jobs.withdraw(path)
    assert local_jobs.running() == [] and not path.exists()
