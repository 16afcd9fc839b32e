"""What ``cjob run`` reports when a job ends, checked against what the job really did.

The in-process executor runs the same restart loop as the Spark driver, so these
runs prove the driver's accounting: ``records_out`` is what completed checkpoints
published (over failed attempts and over a driver that gave up and a new one that
resumed), and a stopped job names the savepoint it was stopped with.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import pathlib
import time
import types as pytypes

import pyarrow as pa
import pytest

from barrier_runtime.api import Dataflow
from barrier_runtime.cli import progress, run_summary
from barrier_runtime.control import job as job_mod
from barrier_runtime.control.job import RuntimeMetrics
from barrier_runtime.core import faults
from barrier_runtime.core.types import CheckpointConfig, CheckpointKind
from barrier_runtime.driver import job_driver
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor, TestingSink, TestingSource

RECORDS = [{"k": i % 7, "n": i} for i in range(3_000)]


def _flow(sink: TestingSink) -> Dataflow:
    flow = Dataflow("counted")
    flow.source("in", TestingSource(RECORDS, batch_size=20)).map_batches("slow", _slowly).sink(
        "out", sink
    )
    return flow


def _slowly(batch: pa.RecordBatch) -> pa.RecordBatch:
    time.sleep(0.001)  # long enough for checkpoints between the crashes
    return batch


def _executor(flow: Dataflow, store_dir: pathlib.Path, **kwargs: object) -> LocalExecutor:
    store = CheckpointStore(open_object_store(str(store_dir)), "t/counted")
    return LocalExecutor(
        flow, parallelism=2, store=store, config=CheckpointConfig(interval=0.01), **kwargs
    )


def _summary(executor: LocalExecutor, result: job_driver.JobResult) -> dict[str, object]:
    stream = io.StringIO()
    out = progress.Output(json_lines=True, stream=stream)
    driver = pytypes.SimpleNamespace(job=executor)
    with contextlib.redirect_stdout(stream):
        run_summary.summary(out, driver, result)  # type: ignore[arg-type]
    event: dict[str, object] = json.loads(stream.getvalue().splitlines()[-1])
    assert event["event"] == "summary"
    return event


def _crash(attempt: int, after: int) -> faults.Crash:
    return faults.Crash(
        faults.FaultPoint.PROCESSING, task="in", subtask=0, after_records=after, attempt=attempt
    )


def test_records_out_is_what_was_published_after_failed_attempts(tmp_path: pathlib.Path) -> None:
    sink = TestingSink()
    injector = faults.FaultInjector([_crash(0, 400), _crash(1, 300)])
    executor = _executor(_flow(sink), tmp_path, fault_injector=injector, max_restarts=5)
    result = executor.run()
    assert result.restarts == 2
    assert len(sink.output) == len(RECORDS)  # exactly once
    assert _summary(executor, result)["records_out"] == {"out": len(RECORDS)}


def test_records_out_counts_what_an_earlier_driver_published(tmp_path: pathlib.Path) -> None:
    """A driver that gave up (its restart budget spent) and a new one that resumed: the
    second one's summary counts every record published, the first driver's too."""
    sink = TestingSink()
    flow = _flow(sink)
    first = _executor(
        flow, tmp_path, fault_injector=faults.FaultInjector([_crash(0, 1_200)]), max_restarts=0
    )
    with pytest.raises(job_driver.JobFailedError):
        first.run()
    published_first = len(sink.output)
    assert 0 < published_first < len(RECORDS)
    second = _executor(flow, tmp_path)
    result = second.run()
    assert len(sink.output) == len(RECORDS)
    assert _summary(second, result)["records_out"] == {"out": len(RECORDS)}


def test_a_stopped_job_names_its_savepoint_not_a_missing_final_checkpoint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = job_driver.JobResult(
        attempts=1,
        completed_checkpoints=[4, 5],
        stopped_with_savepoint="savepoints/sp-0000000005",
        stopped_savepoint_id=5,
    )
    job = pytypes.SimpleNamespace(runtime_metrics=RuntimeMetrics)
    out = progress.Output(json_lines=False)
    run_summary.summary(out, pytypes.SimpleNamespace(job=job), result, "SIGINT")  # type: ignore[arg-type]
    line = capsys.readouterr().out
    assert "None" not in line
    assert "savepoint 5 at savepoints/sp-0000000005 (stopped by SIGINT;" in line


def test_a_new_driver_announces_its_first_id_and_the_ids_a_dead_one_left(
    tmp_path: pathlib.Path,
) -> None:
    """A driver killed mid-checkpoint leaves a half-written checkpoint directory: its id is
    never used again, and the next driver says so instead of silently skipping it."""
    sink = TestingSink()
    first = _executor(_flow(sink), tmp_path)
    first.run()
    done = max(first.result.completed_checkpoints)
    torn = first.store.checkpoint_dir(done + 1, CheckpointKind.CHECKPOINT)
    part = tmp_path / "t" / "counted" / torn / "out" / "0.arrow"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"half an upload")

    second = _executor(_flow(TestingSink()), tmp_path)
    assert second.checkpoint_ids.first_id == done + 2
    events, lines = io.StringIO(), io.StringIO()
    progress.announce_checkpoint_ids(
        progress.Output(json_lines=True, stream=events), second.checkpoint_ids
    )
    progress.announce_checkpoint_ids(
        progress.Output(json_lines=False, stream=lines), second.checkpoint_ids
    )
    event = json.loads(events.getvalue())
    assert event == {
        "event": "checkpoint_ids",
        "t": event["t"],
        "first_id": done + 2,
        "latest_completed": done,
        "skipped": [done + 1],
    }
    assert (
        lines.getvalue()
        .rstrip()
        .endswith(
            f"checkpoint ids continue at {done + 2} after checkpoint {done}; {done + 1} was "
            "reserved by an earlier driver and never completed: skipped"
        )
    )
    assert second.coordinator.next_checkpoint_id == done + 2


def test_between_a_failure_and_the_next_attempt_the_status_says_restarting(
    tmp_path: pathlib.Path,
) -> None:
    """Not ``running | 0 records/s``: which attempt restarts and which checkpoint it restores."""
    injector = faults.FaultInjector([_crash(0, 600)])
    executor = _executor(
        _flow(TestingSink()), tmp_path, fault_injector=injector, restart_backoff=0.6
    )
    stream = io.StringIO()
    with progress.ProgressView(
        executor, progress.Output(json_lines=True, stream=stream), status_every=0.05
    ):
        executor.run()
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    restarting = [e for e in events if e["event"] == "status" and e["state"] == "RESTARTING"]
    assert restarting, events
    restored = executor.result.restored_from[1]
    assert all(e["attempt"] == 1 for e in restarting)
    assert {e["restoring"] for e in restarting} == {restored}
    assert restored is not None


def test_the_status_line_says_restarting_and_what_the_attempt_restores(
    tmp_path: pathlib.Path,
) -> None:
    injector = faults.FaultInjector([_crash(0, 600)])
    executor = _executor(
        _flow(TestingSink()), tmp_path, fault_injector=injector, restart_backoff=0.6
    )
    stream = io.StringIO()
    with progress.ProgressView(
        executor, progress.Output(json_lines=False, stream=stream), status_every=0.05
    ):
        executor.run()
    restored = executor.result.restored_from[1]
    lines = stream.getvalue().splitlines()
    wanted = f"restarting: attempt 1 restores the latest completed checkpoint ({restored}) |"
    assert any(wanted in line for line in lines), lines


def test_while_an_attempt_starts_text_and_json_say_which_and_what_it_restores(
    tmp_path: pathlib.Path,
) -> None:
    """Before every worker of an attempt runs, the line says ``starting: attempt N restores
    …`` and the JSON fields say the same (``state`` stays ``RUNNING``)."""
    executor = _executor(_flow(TestingSink()), tmp_path)
    view = progress.ProgressView(executor, progress.Output(json_lines=True, stream=io.StringIO()))
    starting = job_mod.JobInfo(
        name="counted",
        state=job_mod.JobState.RUNNING,
        attempt=2,
        restarts=2,
        parallelism=2,
        max_parallelism=128,
        start_time=0.0,
        ready=False,
        restored_from=7,
    )
    text, fields = view._restarting(starting)
    assert text == "starting: attempt 2 restores checkpoint 7"
    assert fields == {"attempt": 2, "restoring": 7}
    assert view._restarting(dataclasses.replace(starting, ready=True)) == ("", {})
