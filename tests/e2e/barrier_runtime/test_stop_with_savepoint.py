"""Stop-with-savepoint on a running job, then a new job resumed from that savepoint.

Together the two runs must publish exactly the crash-free output: nothing the
first run did after its savepoint may survive, and nothing before it may repeat.
"""

from __future__ import annotations

import threading

from barrier_runtime.control.job import JobState
from barrier_runtime.core.types import CheckpointConfig, CheckpointKind
from barrier_runtime.demo import running_count_flow
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor, TestingSink, check_exactly_once

JOB = dict(keys=100, events_per_key=300, partitions=3, batch_size=50, rate_per_partition=3000)


def test_stop_with_savepoint_then_resume_is_exactly_once(tmp_path) -> None:
    clean = TestingSink()
    LocalExecutor(
        running_count_flow(clean, **{**JOB, "rate_per_partition": None}),
        parallelism=2,
        store=CheckpointStore(open_object_store(str(tmp_path / "clean")), "default/clean"),
    ).run()

    sink = TestingSink()
    store = CheckpointStore(open_object_store(str(tmp_path / "cp")), "default/sp")
    first = LocalExecutor(
        running_count_flow(sink, **JOB),
        parallelism=2,
        store=store,
        config=CheckpointConfig(interval=0.1),
    )
    assert first.info().state is JobState.CREATED
    results = []
    runner = threading.Thread(target=lambda: results.append(first.run()))
    runner.start()
    assert first.wait_running(30)
    assert first.coordinator.wait_for(
        first.trigger_checkpoint(CheckpointKind.CHECKPOINT).checkpoint_id, 30
    ).completed
    info = first.info()
    assert info.state is JobState.RUNNING and info.ready and info.parallelism == 2

    outcome = first.stop_with_savepoint(timeout=30)
    runner.join(30)
    assert not runner.is_alive()
    assert outcome.completed and outcome.path and "savepoints/sp-" in outcome.path
    assert results[0].stopped_with_savepoint == outcome.path
    assert first.info().state is JobState.STOPPED
    published = len(sink.output)
    assert 0 < published < len(clean.output), "stopped midway"
    metrics = first.runtime_metrics()
    assert metrics.records_out["events"] >= published
    assert metrics.records_in["count"] == metrics.records_out["count"]

    resumed = LocalExecutor(
        running_count_flow(sink, **JOB), parallelism=3, store=store, restore_from=outcome.path
    )
    result = resumed.run()
    assert result.restored_from == [outcome.checkpoint_id]
    report = check_exactly_once(clean.output, sink.output)
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0), report
