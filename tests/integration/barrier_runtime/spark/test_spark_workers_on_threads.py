"""The distributed runtime without Java: the Spark driver's workers on threads, over real TCP.

:class:`ThreadStageLauncher` replaces the barrier stage, everything else is
the production path: the coordinator server with signed messages, workers
that load the pipeline by path, rendezvous, network channels between slices,
the restart loop. (Exactly-once under crashes at every point of the checkpoint
life cycle inside the workers is one host of the crash matrix in
``tests/e2e/barrier_runtime/test_exactly_once_crashes.py``.)
"""

from __future__ import annotations

import pathlib
import socket
import threading

import pytest
from barrier_runtime_testing import spark as testing

from barrier_runtime.api import Dataflow
from barrier_runtime.connectors.files import FileSink
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.driver.restart import Backoff
from barrier_runtime.spark import config, driver, messages, pipeline, wire
from barrier_runtime.testing import (
    Crash,
    FaultPoint,
    JobFailedError,
    TestingSink,
    TestingSource,
    check_exactly_once,
)

PIPELINE = str(pathlib.Path(__file__).with_name("running_count_pipeline.py"))
KEYS, EVENTS_PER_KEY = 100, 300
EXPECTED = [
    {"key": f"k{k}", "seq": s, "count": s + 1} for k in range(KEYS) for s in range(EVENTS_PER_KEY)
]


def _spec(tmp_path, *, crashes=(), rate=None, unaligned=False, max_restarts=10, args=()):
    out = str(tmp_path / "out")
    pipeline_args = [
        "--out",
        out,
        "--keys",
        str(KEYS),
        "--events-per-key",
        str(EVENTS_PER_KEY),
        "--partitions",
        "6",
        "--batch-size",
        "100",
    ]
    if rate:  # events/s per partition
        pipeline_args += ["--rate", str(rate * 6)]
    return driver.SparkJobSpec(
        pipeline=pipeline.PipelineRef.parse(PIPELINE, [*pipeline_args, *args]),
        parallelism=3,
        store=config.StoreRef(str(tmp_path / "cp"), "default/threads"),
        checkpoint=CheckpointConfig(interval=0.1, unaligned=unaligned),
        crashes=tuple(crashes),
        restart=driver.RestartSettings(
            max_restarts=max_restarts, backoff=Backoff(initial=0.01, max=0.05)
        ),
    ), out


def test_the_root_cause_wins_over_closed_channels(tmp_path) -> None:
    crash = Crash(FaultPoint.PROCESSING, task="count", subtask=2, after_records=500)
    spec, _ = _spec(tmp_path, crashes=[crash], rate=2000)
    result = driver.SparkDriver(spec, launcher=testing.ThreadStageLauncher()).run()
    assert result.restarts == 1
    # The worker's own report (its class travels with it), not the wrapper it came in.
    assert result.failures[0].startswith("attempt 0 in count#2: InjectedFault")


def test_restart_budget_exhausted_gives_one_line_reason(tmp_path) -> None:
    crashes = [
        Crash(FaultPoint.PROCESSING, subtask=1, after_records=100, attempt=a) for a in range(3)
    ]
    spec, _ = _spec(tmp_path, crashes=crashes, rate=2000, max_restarts=2)
    with pytest.raises(JobFailedError) as info:
        driver.SparkDriver(spec, launcher=testing.ThreadStageLauncher()).run()
    message = str(info.value)
    assert message.startswith("job failed 3 times within 3600s, more than the restart budget of 2")
    assert "InjectedFault" in message and "\n" not in message


def test_a_second_driver_resumes_with_higher_checkpoint_ids(tmp_path) -> None:
    crash = Crash(FaultPoint.PROCESSING, subtask=0, after_records=6_000)
    spec, out = _spec(tmp_path, crashes=[crash], rate=2000, max_restarts=0)
    first = driver.SparkDriver(spec, launcher=testing.ThreadStageLauncher())
    with pytest.raises(JobFailedError):
        first.run()
    done_before = max(first.job.result.completed_checkpoints)
    spec, out = _spec(tmp_path, rate=2000)
    second = driver.SparkDriver(spec, launcher=testing.ThreadStageLauncher())
    result = second.run()
    assert result.restored_from[0] == done_before
    assert min(result.completed_checkpoints) > done_before
    report = check_exactly_once(EXPECTED, list(FileSink(out).read_committed()))
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0)


def test_workers_refuse_a_pipeline_that_differs_from_the_drivers(tmp_path) -> None:
    spec, _ = _spec(tmp_path, max_restarts=0)
    other = Dataflow("running-count")  # what an outdated driver image might have planned
    other.source("events", TestingSource([{"key": "a", "seq": 0}])).sink("out", TestingSink())
    job = driver.SparkDriver(spec, launcher=testing.ThreadStageLauncher(), flow=other)
    with pytest.raises(JobFailedError, match="differs from the driver's"):
        job.run()


def test_the_coordinator_refuses_connections_without_the_attempt_key(tmp_path) -> None:
    spec, _ = _spec(tmp_path, rate=3000)
    launcher = testing.ThreadStageLauncher()
    job = driver.SparkDriver(spec, launcher=launcher)
    runner = threading.Thread(target=job.run, daemon=True)
    runner.start()
    assert job.job.wait_running(30)
    host, port = job.server.address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        conn = wire.connect_side(sock, wire.derive_key(b"not the secret", "control"))
        conn.send(messages.Hello(0, 0, 1, "127.0.0.1", "127.0.0.1:9"))
        sock.settimeout(5)
        assert conn.receive() is None  # refused: the server closed the connection
    assert job.job.info().restarts == 0
    runner.join(60)
    assert not runner.is_alive()
    assert job.job.result.restarts == 0


def test_workers_leave_when_their_subtasks_end_not_at_the_next_metrics_report(tmp_path) -> None:
    # Workers report metrics every hour here: a worker that noticed its subtasks' end only
    # when it woke up to report would hold the job's end for that long (the driver's
    # shutdown wait would fail the attempt first).
    spec, out = _spec(tmp_path)
    job = driver.SparkDriver(spec, launcher=testing.ThreadStageLauncher(metrics_interval=3600))
    runner = threading.Thread(target=job.run, daemon=True)
    runner.start()
    runner.join(30)
    assert not runner.is_alive()
    assert job.job.result.restarts == 0
    report = check_exactly_once(EXPECTED, list(FileSink(out).read_committed()))
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0)
