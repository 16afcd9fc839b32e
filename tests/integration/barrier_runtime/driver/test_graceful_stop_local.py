"""A graceful stop on the in-process executor: the JobDriver half of SIGTERM handling.

* the stop's savepoint is the newest snapshot, so a new job on the same store
  restores from it with no flag, and the two runs together publish exactly once;
* :meth:`JobDriver.abort` (a savepoint that missed its deadline) cancels what is
  pending, ends the run with :class:`JobAbortedError`, and leaves the latest
  completed checkpoint as the restore point.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

import pytest

from barrier_runtime.core.types import CheckpointConfig, CheckpointKind
from barrier_runtime.demo import running_count_flow
from barrier_runtime.driver import graceful_stop
from barrier_runtime.driver.job_driver import JobAbortedError
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor, TestingSink, check_exactly_once

SHAPE = dict(keys=40, events_per_key=200, partitions=2, batch_size=40)


def _executor(sink: TestingSink, store: CheckpointStore, **flow: Any) -> LocalExecutor:
    return LocalExecutor(
        running_count_flow(sink, **SHAPE, **flow),
        parallelism=2,
        store=store,
        config=CheckpointConfig(interval=0.05),
    )


def _in_thread(executor: LocalExecutor) -> tuple[threading.Thread, list[Any]]:
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(executor.run())
        except Exception as exc:  # the test inspects it
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert executor.wait_running(30)
    return thread, outcome


def _wait_for_checkpoints(executor: LocalExecutor, count: int) -> None:
    done = threading.Event()
    for _ in range(600):
        if len(executor.result.completed_checkpoints) >= count:
            return
        done.wait(0.05)
    pytest.fail(f"fewer than {count} checkpoints completed")


def test_the_stop_savepoint_is_what_the_next_job_restores(tmp_path: Any) -> None:
    clean = TestingSink()
    LocalExecutor(
        running_count_flow(clean, **SHAPE),
        parallelism=2,
        store=CheckpointStore(open_object_store(str(tmp_path / "clean")), "d/c"),
    ).run()
    store = CheckpointStore(open_object_store(str(tmp_path / "cp")), "default/term")
    sink = TestingSink()
    first = _executor(sink, store, rate_per_partition=2000)
    thread, outcome = _in_thread(first)
    _wait_for_checkpoints(first, 2)
    stop = graceful_stop.GracefulStop(first, grace_period=30, hard_exit=pytest.fail)
    stop.handle(signal.SIGTERM)
    stop.join(30)
    thread.join(30)
    assert stop.state is graceful_stop.StopState.SAVED, stop.failure
    result = outcome[0]
    assert result.stopped_savepoint_id == stop.savepoint.checkpoint_id  # type: ignore[union-attr]
    chosen = store.select_restore_point()
    assert chosen is not None and chosen.kind is CheckpointKind.SAVEPOINT
    assert chosen.checkpoint_id == result.stopped_savepoint_id

    second = _executor(sink, store)
    resumed = second.run()
    assert resumed.restored_from[0] == result.stopped_savepoint_id
    report = check_exactly_once(clean.output, sink.output)
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0), report


def test_abort_cancels_and_keeps_the_latest_checkpoint(tmp_path: Any) -> None:
    store = CheckpointStore(open_object_store(str(tmp_path / "cp")), "default/abort")
    executor = _executor(TestingSink(), store, rate_per_partition=2000)
    thread, outcome = _in_thread(executor)
    _wait_for_checkpoints(executor, 2)
    executor.abort("SIGTERM: no final savepoint within the grace period")
    thread.join(30)
    assert not thread.is_alive()
    assert isinstance(outcome[0], JobAbortedError) and "grace period" in str(outcome[0])
    assert executor.result.stopped_with_savepoint is None
    chosen = store.select_restore_point()
    assert chosen is not None and chosen.kind is CheckpointKind.CHECKPOINT
    assert chosen.checkpoint_id == max(executor.result.completed_checkpoints)
