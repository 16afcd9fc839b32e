"""Helpers shared by the tests on real Spark: killing workers and drivers, reading the
driver's JSON lines, calling the control API and checking the published output.

The tests live in ``tests/integration/barrier_runtime/spark`` (with the pipelines they
run, like ``running_count_pipeline.py``); this module is on pytest's path through
``tests/support``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import pathlib
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from barrier_runtime.connectors.files import FileSink
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.driver.restart import Backoff
from barrier_runtime.spark import config, driver, pipeline
from barrier_runtime.testing import CheckReport, check_exactly_once

BUCKET = "cjob-tests"
P = 3
CLI = [sys.executable, "-m", "barrier_runtime.cli"]
Event = dict[str, Any]


# -- the generator job ------------------------------------------------------------------

SPARK_TESTS = pathlib.Path(__file__).resolve().parents[2] / "integration/barrier_runtime/spark"
GENERATOR_PIPELINE = str(SPARK_TESTS / "running_count_pipeline.py")


def load_pipeline(name: str) -> ModuleType:
    """The pipeline module ``name`` of the Spark tests' folder, imported from its file (the
    tests run it by path too), for the helpers it defines beside its dataflow."""
    if (loaded := sys.modules.get(name)) is not None:
        return loaded
    spec = importlib.util.spec_from_file_location(name, SPARK_TESTS / f"{name}.py")
    assert spec is not None and spec.loader is not None, f"no pipeline {name}.py"
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


KEYS, EVENTS_PER_KEY = 200, 300


PARTITIONS, BATCH_SIZE = 6, 100


def generator_args(out_url: str, rate: float | None = None) -> list[str]:
    """Arguments of ``running_count_pipeline.py`` (``rate``: events/s per partition)."""
    args = [
        "--out",
        out_url,
        "--keys",
        str(KEYS),
        "--events-per-key",
        str(EVENTS_PER_KEY),
        "--partitions",
        str(PARTITIONS),
        "--batch-size",
        str(BATCH_SIZE),
    ]
    return args + (["--rate", str(rate * PARTITIONS)] if rate else [])


def job_spec(pipeline_file: str, args: list[str], store_url: str, job: str) -> driver.SparkJobSpec:
    """An in-process Spark job: P workers, exactly-once checkpoints every 0.3 s, quick restarts."""
    return driver.SparkJobSpec(
        pipeline=pipeline.PipelineRef.parse(pipeline_file, args),
        parallelism=P,
        store=config.StoreRef(store_url, job),
        checkpoint=CheckpointConfig(interval=0.3),
        restart=driver.RestartSettings(
            max_restarts=20, window=600, backoff=Backoff(initial=0.2, max=1.0)
        ),
    )


def s3_urls(server: Any) -> tuple[str, str]:
    """A fresh output prefix and checkpoint store prefix in the test bucket."""
    run = uuid.uuid4().hex[:8]
    return server.url(BUCKET, f"{run}/out"), server.url(BUCKET, f"{run}/cp")


def published(out_url: str) -> list[dict[str, Any]]:
    """What the exactly-once file sink has committed under ``out_url``."""
    return list(FileSink(out_url).read_committed())


def assert_exactly_once(expected: Sequence[dict[str, Any]], out_url: str) -> CheckReport:
    """The committed output equals ``expected`` (0 lost, duplicated, out of order), nothing staged."""
    report = check_exactly_once(expected, published(out_url))
    print("exactly-once check:", report.as_dict())
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0), report
    assert not list(FileSink(out_url).store.list("_staging/")), "staged data left behind"
    return report


class WorkerKiller:
    """SIGKILLs one worker process of each new attempt, at a random moment after its hello."""

    def __init__(self, job: driver.SparkDriver, kills: int, seed: int) -> None:
        self._job = job
        self._kills = kills
        self._random = random.Random(seed)
        self.killed: list[tuple[int, int, int, float]] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        self._thread.join(10)

    def _loop(self) -> None:
        last_attempt = -1
        while len(self.killed) < self._kills and not self._done.is_set():
            current = self._job.runner.current
            pids = current.worker_pids if current is not None else {}
            if current is None or current.number == last_attempt or len(pids) < P:
                time.sleep(0.05)
                continue
            delay = self._random.uniform(0.2, 2.5)
            if self._done.wait(delay) or current.stopping:
                continue
            worker = self._random.randrange(P)
            os.kill(pids[worker], signal.SIGKILL)
            self.killed.append((current.number, worker, pids[worker], round(delay, 2)))
            last_attempt = current.number


def run_with_worker_kills(job: driver.SparkDriver, kills: int = 5) -> Any:
    """Run ``job`` while :class:`WorkerKiller` kills ``kills`` workers; check they all died."""
    seed = random.randrange(1 << 30)
    killer = WorkerKiller(job, kills=kills, seed=seed)
    killer.start()
    started = time.monotonic()
    try:
        result = job.run()
    finally:
        killer.stop()
    print(f"seed {seed}; killed (attempt, worker, pid, after s): {killer.killed}")
    print(
        f"{time.monotonic() - started:.1f}s, restarts {result.restarts}, "
        f"checkpoints {len(result.completed_checkpoints)}, failures {result.failures}"
    )
    assert len(killer.killed) == kills, "the job ended before every kill landed"
    assert result.restarts >= kills
    assert sum("WorkerLostError" in f for f in result.failures) >= kills
    return result


# -- cjob subprocesses ------------------------------------------------------------------


def spawn(
    command: Sequence[str], cwd: Any, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """Start ``cjob …`` in its own process group with its JSON lines on a pipe."""
    return subprocess.Popen(
        [*command],
        stdout=subprocess.PIPE,
        text=True,
        cwd=cwd,
        start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )


def read_events(
    proc: subprocess.Popen[str], until: Callable[[Event, list[Event]], bool], timeout: float
) -> list[Event]:
    """Read the driver's JSON lines until ``until(event, events)`` is true; return all read."""
    events: list[Event] = []
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith("{"):
            events.append(json.loads(line))
            if until(events[-1], events):
                return events
    raise AssertionError(f"driver did not get there in {timeout}s; events: {events[-5:]}")


def finish(proc: subprocess.Popen[str], timeout: float) -> list[Event]:
    """Wait for a driver to exit 0; every JSON line it printed (the summary last)."""
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"driver exited {proc.returncode}: {out[-2000:]}"
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert events and events[-1]["event"] == "summary", events[-3:]
    return events


def completed_checkpoints(count: int) -> Callable[[Event, list[Event]], bool]:
    """A :func:`read_events` condition: ``count`` checkpoints completed."""

    def enough(_event: Event, events: list[Event]) -> bool:
        done = [e for e in events if e.get("event") == "checkpoint" and e["status"] == "completed"]
        return len(done) >= count

    return enough


def kill_driver_and_run_again(
    command: Sequence[str],
    cwd: Any,
    out_url: str,
    total: int,
    count_published: Callable[[], int] | None = None,
) -> tuple[list[int], Event]:
    """SIGKILL ``cjob run`` after three completed checkpoints, then run it again to the end.

    ``count_published`` counts the output so far, or an upper bound of it (default: the
    file sink's under ``out_url``). Returns the checkpoints the first driver completed and the second
    one's summary.
    """
    first = spawn(command, cwd)
    try:
        events = read_events(first, completed_checkpoints(3), timeout=180)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
    finally:
        kill_group(first)
    assert first.returncode == -signal.SIGKILL
    completed = [e["id"] for e in events if e.get("event") == "checkpoint"]
    so_far = count_published() if count_published is not None else len(published(out_url))
    assert so_far < total, "the first driver must die mid-run"

    second = spawn(command, cwd)
    try:
        events = finish(second, timeout=300)
    finally:
        kill_group(second)
    summary = events[-1]
    assert summary["status"] == "finished", summary
    restored = summary["restored_from"][0]
    print(f"first driver completed {completed}; second restored {restored}, summary {summary}")
    assert restored is not None and restored >= completed[-1]
    new_ids = [e["id"] for e in events if e.get("event") == "checkpoint"]
    assert new_ids and min(new_ids) > restored
    return completed, summary


def kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL a spawned driver's whole process group (its Spark JVM and workers too)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10)


# -- control API ------------------------------------------------------------------------


def http(method: str, url: str, token: str | None = None, body: Any = None) -> tuple[int, Any]:
    """One JSON request; ``(status, parsed body)`` (text bodies come back as a string)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, method=method, data=data)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, _parse(response.headers, response.read())
    except urllib.error.HTTPError as err:
        with err:
            return err.code, _parse(err.headers, err.read())


def _parse(headers: Any, raw: bytes) -> Any:
    if headers.get("Content-Type", "").startswith("application/json"):
        return json.loads(raw or b"null")
    return raw.decode()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
