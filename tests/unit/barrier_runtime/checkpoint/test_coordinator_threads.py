"""Concurrency: acks from many threads, wait_for, commits in flight during abort and restart.

No sleeping-and-hoping: threads are joined with timeouts and the fake store
signals when a commit is in flight.
"""

from __future__ import annotations

import threading

import pytest
from barrier_runtime_testing import checkpoint as testing

from barrier_runtime.checkpoint import outcomes, pending, stats
from barrier_runtime.core import metadata, types

ID = types.CheckpointId
R = types.FailureReason


def run_threads(targets: list[threading.Thread], timeout: float = 10.0) -> None:
    for thread in targets:
        thread.start()
    for thread in targets:
        thread.join(timeout)
        assert not thread.is_alive(), "thread did not finish"


def test_concurrent_acks_complete_exactly_once() -> None:
    tasks = testing.task_keys(32)
    h = testing.CoordinatorHarness.create(types.CheckpointConfig(max_concurrent=4), tasks=tasks)
    ids = [ID(i) for i in (1, 2, 3, 4)]
    assert all(h.coordinator.trigger_checkpoint().checkpoint_id == i for i in ids)
    results: list[pending.AckResult] = []
    lock = threading.Lock()
    start = threading.Barrier(len(tasks))

    def worker(task: metadata.TaskKey) -> None:
        start.wait(5.0)
        for checkpoint_id in ids:
            for _ in range(2):  # every ack twice: one must be a duplicate
                result = h.ack(checkpoint_id, task)
                with lock:
                    results.append(result)

    run_threads([threading.Thread(target=worker, args=(t,)) for t in tasks])
    # checkpoints complete in whatever order their last ack lands; each exactly once,
    # and a completion may subsume older ones still collecting acks
    completed = set(h.gateway.completed_ids)
    aborted = set(h.gateway.aborted_ids)
    assert len(h.gateway.completed_ids) == len(completed)
    assert len(h.gateway.aborted_ids) == len(aborted)
    assert completed | aborted == set(ids)
    assert not completed & aborted
    assert max(ids) in completed
    assert set(h.store.committed) == completed
    assert h.coordinator.stats().counts.in_progress == 0
    assert results.count(pending.AckResult.SUCCESS) >= len(tasks)


def test_concurrent_acks_for_one_checkpoint() -> None:
    tasks = testing.task_keys(64)
    h = testing.CoordinatorHarness.create(tasks=tasks)
    checkpoint_id = h.coordinator.trigger_checkpoint().checkpoint_id
    results: list[pending.AckResult] = []
    lock = threading.Lock()

    def worker(task: metadata.TaskKey) -> None:
        result = h.ack(checkpoint_id, task)
        with lock:
            results.append(result)

    run_threads([threading.Thread(target=worker, args=(t,)) for t in tasks])
    assert results == [pending.AckResult.SUCCESS] * 64
    assert h.store.commit_attempts == [1]
    assert h.gateway.completed_ids == [1]
    assert len(h.store.committed[ID(1)].state_handles) == 64


def test_wait_for_wakes_up_on_completion() -> None:
    h = testing.CoordinatorHarness.create()
    checkpoint_id = h.coordinator.trigger_checkpoint().checkpoint_id
    assert checkpoint_id is not None
    got: list[outcomes.CheckpointOutcome] = []
    waiter = threading.Thread(target=lambda: got.append(h.coordinator.wait_for(checkpoint_id, 10)))
    waiter.start()
    h.ack_all(checkpoint_id)
    waiter.join(10)
    assert not waiter.is_alive()
    assert got[0].completed


def test_wait_for_wakes_up_on_abort() -> None:
    h = testing.CoordinatorHarness.create()
    h.coordinator.trigger_checkpoint()
    got: list[outcomes.CheckpointOutcome] = []
    waiter = threading.Thread(target=lambda: got.append(h.coordinator.wait_for(ID(1), 10)))
    waiter.start()
    h.coordinator.decline(ID(1), h.tasks[0])
    waiter.join(10)
    assert got[0].failure is R.DECLINED


def test_wait_for_gives_up_with_in_progress() -> None:
    h = testing.CoordinatorHarness.create()
    h.coordinator.trigger_checkpoint()
    outcome = h.coordinator.wait_for(ID(1), timeout=0.01)
    assert outcome.status is stats.CheckpointStatus.IN_PROGRESS
    assert not outcome.is_final


def test_wait_for_unknown_id_raises() -> None:
    h = testing.CoordinatorHarness.create()
    with pytest.raises(outcomes.UnknownCheckpointError, match="checkpoint 5"):
        h.coordinator.wait_for(ID(5), timeout=0)


def test_committing_checkpoint_is_not_aborted_and_abort_waits_for_it() -> None:
    h = testing.CoordinatorHarness.create(types.CheckpointConfig(max_concurrent=2))
    h.coordinator.trigger_checkpoint()
    h.coordinator.trigger_checkpoint()
    h.store.hold_commits()
    acker = threading.Thread(target=h.ack_all, args=(2,))
    acker.start()
    assert h.store.wait_until_committing()
    aborter = threading.Thread(target=h.coordinator.abort_all_pending, args=(R.TASK_FAILURE,))
    aborter.start()
    # checkpoint 1 is aborted at once; 2 is past the point of no return
    assert h.coordinator.wait_for(ID(1), 5.0).failure is R.TASK_FAILURE
    aborter.join(0.05)
    assert aborter.is_alive(), "abort_all_pending must wait for the commit in flight"
    h.store.release_commits()
    for thread in (acker, aborter):
        thread.join(10)
        assert not thread.is_alive()
    assert h.gateway.completed_ids == [2]
    assert h.gateway.aborted == [(ID(1), R.TASK_FAILURE)]


def test_timeout_and_decline_do_not_touch_a_committing_checkpoint() -> None:
    h = testing.CoordinatorHarness.create(types.CheckpointConfig(interval=1000.0, timeout=1.0))
    h.coordinator.trigger_checkpoint()
    h.store.hold_commits()
    acker = threading.Thread(target=h.ack_all, args=(1,))
    acker.start()
    assert h.store.wait_until_committing()
    h.clock.advance(5.0)
    h.coordinator.tick()
    h.coordinator.decline(ID(1), h.tasks[0])
    h.store.release_commits()
    acker.join(10)
    assert h.gateway.aborted == []
    assert h.gateway.completed_ids == [1]


def test_gateway_failure_during_commit_does_not_abort_it() -> None:
    """A trigger that fails after every task already acked leaves the commit to decide."""
    h = testing.CoordinatorHarness.create()

    def ack_then_fail(barrier: types.Barrier) -> None:
        h.ack_all(barrier.checkpoint_id)
        raise ConnectionError("lost a worker after it acked")

    h.gateway.on_trigger = ack_then_fail
    outcome = h.coordinator.trigger_checkpoint()
    assert outcome.ok
    assert h.gateway.completed_ids == [1]
    assert h.gateway.aborted == []


def test_gateway_may_ack_synchronously_from_trigger() -> None:
    """No lock is held while the gateway runs: an in-line ack must not deadlock."""
    h = testing.CoordinatorHarness.create()
    h.gateway.on_trigger = lambda barrier: h.ack_all(barrier.checkpoint_id)
    done = threading.Event()

    def trigger() -> None:
        h.coordinator.trigger_checkpoint()
        done.set()

    thread = threading.Thread(target=trigger, daemon=True)
    thread.start()
    assert done.wait(5.0), "deadlock: trigger_checkpoint did not return"
    assert h.gateway.completed_ids == [1]


def test_barriers_leave_in_id_order_under_concurrent_triggers() -> None:
    h = testing.CoordinatorHarness.create(types.CheckpointConfig(max_concurrent=100))
    start = threading.Barrier(8)

    def trigger() -> None:
        start.wait(5.0)
        for _ in range(10):
            h.coordinator.trigger_checkpoint()

    run_threads([threading.Thread(target=trigger) for _ in range(8)])
    assert h.gateway.triggered_ids == list(range(1, 81))


def test_a_second_trigger_waits_until_the_first_barrier_is_delivered() -> None:
    """Ids are taken and barriers delivered under one trigger lock: never 2 before 1."""
    h = testing.CoordinatorHarness.create(types.CheckpointConfig(max_concurrent=5))
    delivering, release = threading.Event(), threading.Event()

    def slow_first_delivery(barrier: types.Barrier) -> None:
        if barrier.checkpoint_id == 1:
            delivering.set()
            assert release.wait(10.0)

    h.gateway.on_trigger = slow_first_delivery
    first = threading.Thread(target=h.coordinator.trigger_checkpoint)
    first.start()
    assert delivering.wait(5.0)
    second = threading.Thread(target=h.coordinator.trigger_checkpoint)
    second.start()
    second.join(0.1)
    assert second.is_alive(), "the second trigger must wait for the first delivery"
    assert h.gateway.triggered_ids == [1]
    release.set()
    for thread in (first, second):
        thread.join(10.0)
        assert not thread.is_alive()
    assert h.gateway.triggered_ids == [1, 2]
