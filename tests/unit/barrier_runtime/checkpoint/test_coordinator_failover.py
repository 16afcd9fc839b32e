"""Tolerable failures: consecutive counted failures beyond the limit ask for one failover."""

from __future__ import annotations

from barrier_runtime_testing import checkpoint as testing

from barrier_runtime.core import types
from barrier_runtime.storage import errors

ID = types.CheckpointId
SP = types.CheckpointKind.SAVEPOINT
R = types.FailureReason


def harness(tolerable: int) -> testing.CoordinatorHarness:
    config = types.CheckpointConfig(interval=1000.0, timeout=5.0, tolerable_failures=tolerable)
    return testing.CoordinatorHarness.create(config)


def fail_by_decline(h: testing.CoordinatorHarness) -> None:
    checkpoint_id = h.coordinator.trigger_checkpoint().checkpoint_id
    assert checkpoint_id is not None
    h.coordinator.decline(checkpoint_id, h.tasks[0])


def test_failover_after_more_than_tolerable_failures() -> None:
    h = harness(tolerable=2)
    fail_by_decline(h)
    fail_by_decline(h)
    assert h.failovers == []
    fail_by_decline(h)
    assert len(h.failovers) == 1
    assert "3 times in a row" in h.failovers[0]
    assert "checkpoint 3 declined" in h.failovers[0]


def test_failover_requested_only_once() -> None:
    h = harness(tolerable=0)
    for _ in range(4):
        fail_by_decline(h)
    assert len(h.failovers) == 1
    assert h.coordinator.stats().consecutive_failures == 4


def test_mixed_counted_reasons_add_up() -> None:
    h = harness(tolerable=2)
    fail_by_decline(h)  # DECLINED
    h.coordinator.trigger_checkpoint()
    h.clock.advance(5.0)
    h.coordinator.tick()  # TIMEOUT
    h.store.fail_next_commits(errors.StorageUnavailableError("down"))
    h.coordinator.trigger_checkpoint()
    h.ack_all(3)  # STORAGE_FAILURE
    assert [reason for _, reason in h.gateway.aborted] == [R.DECLINED, R.TIMEOUT, R.STORAGE_FAILURE]
    assert len(h.failovers) == 1


def test_completion_resets_the_counter() -> None:
    h = harness(tolerable=1)
    fail_by_decline(h)
    h.coordinator.trigger_checkpoint()
    h.ack_all(2)
    fail_by_decline(h)
    assert h.failovers == []
    assert h.coordinator.stats().consecutive_failures == 1


def test_uncounted_reasons_do_not_fail_over() -> None:
    h = harness(tolerable=0)
    h.coordinator.trigger_checkpoint()
    h.coordinator.decline(ID(1), h.tasks[0], R.CANCELLED)
    h.coordinator.trigger_checkpoint()
    h.coordinator.abort_all_pending(R.TASK_FAILURE)
    h.coordinator.trigger_checkpoint()
    h.coordinator.abort_all_pending(R.JOB_STOPPING)
    h.gateway.trigger_error = ConnectionError("no workers")
    h.coordinator.trigger_checkpoint()  # TASKS_NOT_RUNNING
    assert len(h.gateway.aborted) == 4
    assert h.failovers == []


def test_savepoint_failures_do_not_fail_over() -> None:
    h = harness(tolerable=0)
    h.coordinator.trigger_checkpoint(SP)
    h.coordinator.decline(ID(1), h.tasks[0])
    assert h.gateway.aborted == [(ID(1), R.DECLINED)]
    assert h.failovers == []


def test_reset_for_restart_rearms_failover() -> None:
    h = harness(tolerable=0)
    fail_by_decline(h)
    h.coordinator.reset_for_restart(h.tasks)
    assert h.coordinator.stats().consecutive_failures == 0
    fail_by_decline(h)
    assert len(h.failovers) == 2


def test_failing_failover_callback_does_not_break_the_coordinator() -> None:
    calls: list[str] = []

    def explode(message: str) -> None:
        calls.append(message)
        raise RuntimeError("driver busy")

    config = types.CheckpointConfig(tolerable_failures=0)
    h = testing.CoordinatorHarness.create(config, on_failover=explode)
    fail_by_decline(h)
    assert len(calls) == 1
    assert h.gateway.aborted == [(ID(1), R.DECLINED)]
    assert h.coordinator.trigger_checkpoint().ok
