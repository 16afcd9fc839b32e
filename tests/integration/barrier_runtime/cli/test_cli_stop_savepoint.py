"""``cjob savepoint`` and ``cjob stop`` against a real ``cjob run`` on local Spark.

The run is the demo pipeline, endless and rate-limited, with a local store;
it serves its control API on a free port and publishes it in a temporary jobs
directory. With no ``--url`` and no token, ``cjob savepoint`` finds it there
and takes a savepoint the job survives; ``cjob stop`` takes a final savepoint
and the run ends with exit 0 naming it; the published record is gone
afterwards and both savepoints are listed in the store. Every wait is on a
condition with a timeout.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import cli_contract
import pytest

CJOB = pathlib.Path(sys.executable).with_name("cjob")
pytestmark = pytest.mark.slow
JOB = "default/running-count"
Event = dict[str, Any]


class RunningJob:
    """A ``cjob run --json`` in its own process group; its JSON lines read by a thread."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: pathlib.Path) -> None:
        self.proc = subprocess.Popen(
            [str(CJOB), *argv],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.events: list[Event] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def wait_for(self, wanted: Callable[[Event], bool], timeout: float, what: str) -> Event:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                raise AssertionError(
                    f"cjob run exited ({self.proc.wait()}) before {what}: {self._stderr()}"
                )
            if line.startswith("{"):
                event = json.loads(line)
                self.events.append(event)
                if wanted(event):
                    return event
        raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")

    def _stderr(self) -> str:
        assert self.proc.stderr is not None
        return self.proc.stderr.read()[-2000:]

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)


@pytest.fixture
def env(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.delenv("CJOB_CONTROL_TOKEN", raising=False)
    return {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "CJOB_JOBS_DIR": str(tmp_path / "jobs"),
        "CJOB_LOG_DIR": str(tmp_path / "logs"),
    }


@pytest.fixture
def running(tmp_path: pathlib.Path, env: dict[str, str]) -> Iterator[RunningJob]:
    argv = [
        "run",
        "barrier_runtime.demo",
        "--json",
        "-p",
        "2",
        "--checkpoint-interval",
        "0.5",
        "--store",
        str(tmp_path / "cp"),
        "--status-every",
        "60",
        "--",
        "--out",
        str(tmp_path / "out"),
        "--keys",
        "20",
        "--events-per-key",
        "0",
        "--rate",
        "200",
    ]
    job = RunningJob(argv, env, tmp_path)
    try:
        yield job
    finally:
        job.kill()


def _cjob(env: dict[str, str], cwd: pathlib.Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CJOB), *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_savepoint_then_stop_a_local_run_found_through_what_it_published(
    running: RunningJob, env: dict[str, str], tmp_path: pathlib.Path
) -> None:
    control = running.wait_for(lambda e: e["event"] == "control", 300, "the control API")
    record = pathlib.Path(control["record"])
    assert record.parent == tmp_path / "jobs" and record.exists()
    # No $CJOB_CONTROL_TOKEN: cjob run made one up, and a request without it is refused.
    assert control["authenticated"] is True
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{control['url']}/v1/job", timeout=30)
    assert refused.value.code == 401
    running.wait_for(
        lambda e: e["event"] == "checkpoint" and e["status"] == "completed",
        240,
        "a first completed checkpoint",
    )

    saved = _cjob(env, tmp_path, "savepoint", "--json")
    assert saved.returncode == 0, saved.stderr
    savepoint = json.loads(saved.stdout)
    assert savepoint["event"] == "savepoint" and savepoint["job"] == JOB
    assert f"{JOB}/savepoints/sp-" in savepoint["path"]
    assert running.proc.poll() is None, "a savepoint must not stop the job"

    stopped = _cjob(env, tmp_path, "stop", "--savepoint", "--json")
    assert stopped.returncode == 0, stopped.stderr
    final = json.loads(stopped.stdout)
    assert final["event"] == "stopped" and final["id"] > savepoint["id"]

    summary = running.wait_for(lambda e: e["event"] == "summary", 120, "the run's summary")
    assert running.proc.wait(60) == 0
    assert summary["status"] == "stopped" and summary["savepoint_id"] == final["id"], summary
    assert not record.exists(), "the published control API must be withdrawn at exit"
    cli_contract.assert_events_documented(running.events)

    listed = _cjob(
        env,
        tmp_path,
        "checkpoints",
        "list",
        "--json",
        "--store",
        str(tmp_path / "cp"),
        "--job",
        JOB,
    )
    kinds = {row["id"]: row["kind"] for row in json.loads(listed.stdout)}
    assert kinds[savepoint["id"]] == kinds[final["id"]] == "savepoint"

    nothing = _cjob(env, tmp_path, "stop")
    assert nothing.returncode == 2
    assert "cjob: error: no cjob run is running on this machine" in nothing.stderr
