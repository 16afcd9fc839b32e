"""Exactly-once on real Spark (local mode, 3 worker processes) with a real S3 server.

The job is the keyed running count (``barrier_runtime.demo``) with per-key
sequence numbers and the exactly-once file sink, checkpoints and output both
in the SeaweedFS bucket. One SparkSession serves the in-process tests (Spark
starts slowly); the driver-restart test runs ``cjob run`` as subprocesses.

* crash-free: the reference output, which must also equal the analytic one;
* worker processes SIGKILLed five times at random moments (after the attempt's
  workers said hello: during restore, rendezvous, processing or snapshots);
* the driver process SIGKILLed once mid-run, then ``cjob run`` again;
* ``cjob driver`` from an operator-style job.json: control API (401 without
  the token, checkpoints only on request), stop with a savepoint, and a new
  run restoring that savepoint.

Each must publish exactly the crash-free output: lost = duplicated =
out-of-order = 0.
"""

from __future__ import annotations

import contextlib
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

import pytest

from barrier_runtime.checkpoint.types import CheckpointConfig
from barrier_runtime.connectors.files import FileSink
from barrier_runtime.driver.restart import Backoff
from barrier_runtime.spark import config, driver, pipeline, session
from barrier_runtime.testing import check_exactly_once

pytestmark = [pytest.mark.s3, pytest.mark.slow]

PIPELINE = str(pathlib.Path(__file__).with_name("running_count_pipeline.py"))
BUCKET = "cjob-tests"
P = 3
KEYS, EVENTS_PER_KEY = 200, 300
CLI = [sys.executable, "-m", "barrier_runtime.cli"]


@pytest.fixture(scope="module")
def s3_env(s3_server):
    """Credentials in the environment before Spark starts: executors inherit it."""
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    os.environ["AWS_ACCESS_KEY_ID"] = s3_server.access_key
    os.environ["AWS_SECRET_ACCESS_KEY"] = s3_server.secret_key
    yield s3_server
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="module")
def spark(s3_env):
    started = time.monotonic()
    spark_session = session.build_session("local[3]", app_name="cjob-tests", parallelism=P)
    print(f"SparkSession ready in {time.monotonic() - started:.1f}s")
    yield spark_session
    spark_session.stop()


def _urls(server):
    run = uuid.uuid4().hex[:8]
    return server.url(BUCKET, f"{run}/out"), server.url(BUCKET, f"{run}/cp")


def _pipeline_args(out_url, rate=None):
    args = ["--out", out_url, "--keys", str(KEYS), "--events-per-key", str(EVENTS_PER_KEY)]
    return args + (["--rate", str(rate)] if rate else [])


def _spec(out_url, store_url, *, rate=None):
    return driver.SparkJobSpec(
        pipeline=pipeline.PipelineRef.parse(PIPELINE, _pipeline_args(out_url, rate)),
        parallelism=P,
        store=config.StoreRef(store_url, "default/running-count"),
        checkpoint=CheckpointConfig(interval=0.3),
        restart=driver.RestartSettings(
            max_restarts=20, window=600, backoff=Backoff(initial=0.2, max=1.0)
        ),
    )


def _published(out_url):
    return list(FileSink(out_url).read_committed())


def _assert_exactly_once(expected, out_url):
    report = check_exactly_once(expected, _published(out_url))
    print("exactly-once check:", report.as_dict())
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0), report
    assert not list(FileSink(out_url).store.list("_staging/")), "staged data left behind"


@pytest.fixture(scope="module")
def crash_free(spark, s3_env):
    out_url, store_url = _urls(s3_env)
    started = time.monotonic()
    result = driver.SparkDriver(_spec(out_url, store_url), session=spark).run()
    print(f"crash-free run: {time.monotonic() - started:.1f}s, {result}")
    assert result.restarts == 0 and result.final_checkpoint is not None
    return _published(out_url)


def test_crash_free_run_publishes_every_count_once(crash_free) -> None:
    expected = [
        {"key": f"k{k}", "seq": s, "count": s + 1}
        for k in range(KEYS)
        for s in range(EVENTS_PER_KEY)
    ]
    report = check_exactly_once(expected, crash_free)
    assert report.exactly_once and report.actual == KEYS * EVENTS_PER_KEY


class _WorkerKiller:
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


def test_worker_processes_killed_five_times(spark, s3_env, crash_free) -> None:
    out_url, store_url = _urls(s3_env)
    job = driver.SparkDriver(_spec(out_url, store_url, rate=800), session=spark)
    seed = random.randrange(1 << 30)
    killer = _WorkerKiller(job, kills=5, seed=seed)
    killer.start()
    started = time.monotonic()
    try:
        result = job.run()
    finally:
        killer.stop()
    print(f"seed {seed}; killed (attempt, worker, pid, after s): {killer.killed}")
    print(f"{time.monotonic() - started:.1f}s, restarts {result.restarts}, "
          f"checkpoints {len(result.completed_checkpoints)}, failures {result.failures}")
    assert len(killer.killed) == 5
    assert result.restarts >= 5
    assert sum("WorkerLostError" in f for f in result.failures) >= 5
    _assert_exactly_once(crash_free, out_url)


def _events(proc, until, timeout):
    """Read the driver's JSON lines until ``until(event)`` is true; return all events read."""
    events = []
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


def test_driver_killed_and_restarted(s3_env, crash_free, tmp_path) -> None:
    out_url, store_url = _urls(s3_env)
    command = [
        *CLI, "run", "--json", "-p", str(P), "--checkpoint-interval", "0.3",
        "--store", store_url, "--job", "default/driver-restart", "--restart-backoff", "0.2",
        PIPELINE, "--", *_pipeline_args(out_url, rate=600),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    first = subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, env=env, start_new_session=True,
        cwd=tmp_path,
    )  # fmt: skip
    try:
        completed = []

        def three_checkpoints(event, _events):
            if event.get("event") == "checkpoint" and event.get("status") == "completed":
                completed.append(event["id"])
            return len(completed) >= 3

        _events(first, three_checkpoints, timeout=120)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
    finally:
        _kill_group(first)
    assert first.returncode == -signal.SIGKILL
    assert not _published_complete(out_url), "the first driver must die mid-run"

    second = subprocess.run(
        [*command], capture_output=True, text=True, env=env, timeout=240, cwd=tmp_path, check=False
    )
    assert second.returncode == 0, second.stderr[-2000:]
    events = [json.loads(line) for line in second.stdout.splitlines() if line.startswith("{")]
    summary = events[-1]
    assert summary["event"] == "summary" and summary["status"] == "finished"
    restored = summary["restored_from"][0]
    print(f"first driver completed {completed}; second restored {restored}, summary {summary}")
    assert restored is not None and restored >= completed[-1]
    new_ids = [e["id"] for e in events if e.get("event") == "checkpoint"]
    assert new_ids and min(new_ids) > restored
    _assert_exactly_once(crash_free, out_url)


def _published_complete(out_url):
    return len(_published(out_url)) == KEYS * EVENTS_PER_KEY


def _kill_group(proc):
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _http(method, url, token=None, body=None):
    request = urllib.request.Request(url, method=method, data=None if body is None else
                                     json.dumps(body).encode())  # fmt: skip
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_driver_command_serves_the_control_api_and_stops_with_a_savepoint(
    spark, s3_env, crash_free, tmp_path
) -> None:
    """``cjob driver`` as the operator runs it; a later run resumes from the savepoint."""
    run = uuid.uuid4().hex[:8]
    out_url = s3_env.url(BUCKET, f"{run}/out")
    port, token = _free_port(), uuid.uuid4().hex
    job = {
        "formatVersion": 1,
        "job": {"namespace": "default", "name": "ctl", "uid": "u1"},
        "pipeline": {"file": PIPELINE, "args": _pipeline_args(out_url, rate=400)},
        "parallelism": P, "maxParallelism": 128,
        "checkpointing": {"timeoutSeconds": 60, "mode": "ExactlyOnce", "triggeredBy": "operator"},
        "storage": {"endpoint": s3_env.endpoint, "bucket": BUCKET, "root": f"{run}/default/ctl",
                    "accessKeyEnv": "AWS_ACCESS_KEY_ID", "secretKeyEnv": "AWS_SECRET_ACCESS_KEY"},
        "restartPolicy": {"maxRestarts": 3, "windowSeconds": 600,
                          "backoff": {"initialSeconds": 0.2, "maxSeconds": 1}},
        "control": {"port": port, "tokenEnv": "CJOB_CONTROL_TOKEN"},
        "sparkConf": {"spark.master": "k8s://https://kubernetes.default.svc"},
    }  # fmt: skip
    config_file = tmp_path / "job.json"
    config_file.write_text(json.dumps(job))
    env = {**os.environ, "CJOB_CONTROL_TOKEN": token, "CJOB_SPARK_MASTER": f"local[{P}]"}
    proc = subprocess.Popen(
        [*CLI, "driver", "--config", str(config_file)], env=env, cwd=tmp_path,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        _wait(lambda: _http("GET", f"{base}/readyz")[0] == 200, 180, "the driver to be ready")
        assert _http("POST", f"{base}/v1/checkpoints", body={"kind": "checkpoint"})[0] == 401
        status, body = _http("POST", f"{base}/v1/checkpoints", token, {"kind": "checkpoint"})
        assert status == 202, body
        first = body["id"]
        _wait(
            lambda: _http("GET", f"{base}/v1/checkpoints/{first}", token)[1]["status"]
            == "completed",
            60,
            "the triggered checkpoint",
        )
        time.sleep(1.0)  # the driver itself must not trigger periodic checkpoints
        _, listing = _http("GET", f"{base}/v1/checkpoints", token)
        assert listing["counts"]["completed"] == 1, listing["counts"]
        status, stopped = _http("POST", f"{base}/v1/stop", token, {"savepoint": True})
        assert status == 200, stopped
        assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        _kill_group(proc)
    savepoint = stopped["path"]
    assert "/savepoints/sp-" in savepoint and stopped["id"] > first
    assert not _published_complete(out_url)

    spec = driver.SparkJobSpec(
        pipeline=pipeline.PipelineRef.parse(PIPELINE, _pipeline_args(out_url)),
        parallelism=P,
        store=config.StoreRef(s3_env.url(BUCKET, ""), f"{run}/default/ctl"),
        checkpoint=CheckpointConfig(interval=0.3),
        restore_from=savepoint,
    )
    result = driver.SparkDriver(spec, session=spark).run()
    assert result.restored_from[0] == stopped["id"]
    _assert_exactly_once(crash_free, out_url)
