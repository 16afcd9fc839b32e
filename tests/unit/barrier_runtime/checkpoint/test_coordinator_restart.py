"""Failover and stop: abort_all_pending and reset_for_restart; ids keep increasing."""

from __future__ import annotations

import pytest
from barrier_runtime_testing import checkpoint as testing

from barrier_runtime.checkpoint import pending
from barrier_runtime.core import types

ID = types.CheckpointId
R = types.FailureReason


def test_abort_all_pending_notifies_each_once() -> None:
    h = testing.CoordinatorHarness.create(types.CheckpointConfig(max_concurrent=3))
    for _ in range(3):
        h.coordinator.trigger_checkpoint()
    h.coordinator.abort_all_pending(R.JOB_STOPPING)
    h.coordinator.abort_all_pending(R.TASK_FAILURE)
    assert sorted(h.gateway.aborted) == [(ID(i), R.JOB_STOPPING) for i in (1, 2, 3)]
    assert h.coordinator.stats().counts.in_progress == 0


def test_ids_keep_increasing_across_restarts() -> None:
    h = testing.CoordinatorHarness.create(first_checkpoint_id=7)
    h.coordinator.trigger_checkpoint()
    h.coordinator.reset_for_restart(h.tasks)
    assert h.gateway.aborted == [(ID(7), R.TASK_FAILURE)]
    assert h.coordinator.trigger_checkpoint().checkpoint_id == 8
    h.ack_all(8)
    h.coordinator.reset_for_restart(h.tasks)
    assert h.coordinator.trigger_checkpoint().checkpoint_id == 9
    assert h.gateway.triggered_ids == [7, 8, 9]


def test_restart_changes_the_expected_tasks() -> None:
    h = testing.CoordinatorHarness.create(tasks=2)
    new_tasks = testing.task_keys(3, "map")
    h.coordinator.reset_for_restart(new_tasks)
    h.coordinator.trigger_checkpoint()
    h.ack_all(1, new_tasks[:2])
    assert h.gateway.completed == []
    assert h.ack(1, new_tasks[2]) is pending.AckResult.SUCCESS
    assert h.gateway.completed_ids == [1]


def test_acks_from_the_previous_attempt_are_discarded() -> None:
    h = testing.CoordinatorHarness.create()
    h.coordinator.trigger_checkpoint()
    h.coordinator.reset_for_restart(h.tasks)
    assert h.ack(1, h.tasks[0]) is pending.AckResult.DISCARDED


def test_restart_restarts_the_periodic_schedule() -> None:
    h = testing.CoordinatorHarness.create(types.CheckpointConfig(interval=10.0), start=0.0)
    h.clock.advance(8.0)
    h.coordinator.reset_for_restart(h.tasks)
    h.clock.advance(5.0)  # 13s after start, 5s after the restart
    h.coordinator.tick()
    assert h.gateway.barriers == []
    h.clock.advance(5.0)
    h.coordinator.tick()
    assert h.gateway.triggered_ids == [1]


def test_restart_needs_tasks() -> None:
    h = testing.CoordinatorHarness.create()
    with pytest.raises(ValueError, match="at least one task"):
        h.coordinator.reset_for_restart([])


def test_constructor_validates_inputs() -> None:
    with pytest.raises(ValueError, match="at least one task"):
        testing.CoordinatorHarness.create(tasks=[])
    with pytest.raises(ValueError, match="start at 1"):
        testing.CoordinatorHarness.create(first_checkpoint_id=0)


def test_savepoint_on_stop() -> None:
    h = testing.CoordinatorHarness.create()
    h.coordinator.trigger_checkpoint()  # a periodic checkpoint in flight
    savepoint = h.coordinator.trigger_checkpoint(types.CheckpointKind.SAVEPOINT)
    assert savepoint.checkpoint_id == 2
    h.ack_all(2)
    outcome = h.coordinator.wait_for(ID(2), timeout=1.0)
    assert outcome.completed
    assert outcome.path == "checkpoints/sp-0000000002"
    # the completed savepoint subsumed the older checkpoint; stopping aborts nothing twice
    assert h.gateway.aborted == [(ID(1), R.SUBSUMED)]
    h.coordinator.abort_all_pending(R.JOB_STOPPING)
    assert h.gateway.aborted == [(ID(1), R.SUBSUMED)]
    assert h.gateway.completed_ids == [2]


def test_stop_aborts_a_checkpoint_newer_than_the_savepoint() -> None:
    h = testing.CoordinatorHarness.create(types.CheckpointConfig(max_concurrent=2))
    h.coordinator.trigger_checkpoint(types.CheckpointKind.SAVEPOINT)
    h.coordinator.trigger_checkpoint()
    h.ack_all(1)
    h.coordinator.abort_all_pending(R.JOB_STOPPING)
    assert h.gateway.completed_ids == [1]
    assert h.gateway.aborted == [(ID(2), R.JOB_STOPPING)]
