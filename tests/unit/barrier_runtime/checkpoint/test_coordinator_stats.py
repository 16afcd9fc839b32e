"""StatsTracker: counts, latest entries, bounded history."""

from __future__ import annotations

from barrier_runtime_testing import checkpoint as testing

from barrier_runtime.checkpoint import pending, stats
from barrier_runtime.core import types

ID = types.CheckpointId
TASKS = testing.task_keys(2)
CP = types.CheckpointKind.CHECKPOINT
SP = types.CheckpointKind.SAVEPOINT


def started(
    tracker: stats.StatsTracker,
    checkpoint_id: int,
    kind: types.CheckpointKind = CP,
    trigger_time: float = 100.0,
) -> pending.PendingCheckpoint:
    checkpoint = pending.PendingCheckpoint(
        types.Barrier(ID(checkpoint_id), trigger_time, kind), frozenset(TASKS)
    )
    tracker.checkpoint_triggered(checkpoint)
    return checkpoint


def test_in_progress_entry_reflects_acks_so_far() -> None:
    tracker = stats.StatsTracker()
    checkpoint = started(tracker, 1)
    checkpoint.acknowledge(testing.acknowledgement(ID(1), TASKS[0], size=7), now=101.5)
    snapshot = tracker.snapshot()
    entry = snapshot.latest_in_progress
    assert entry is not None
    assert entry.status is stats.CheckpointStatus.IN_PROGRESS
    assert (entry.num_acknowledged, entry.num_tasks, entry.state_size) == (1, 2, 7)
    assert entry.ack_times == {TASKS[0]: 101.5}
    assert entry.duration is None
    assert snapshot.counts == stats.CheckpointCounts(triggered=1, in_progress=1)


def test_completed_and_failed_entries() -> None:
    tracker = stats.StatsTracker()
    done, failed = started(tracker, 1), started(tracker, 2)
    tracker.checkpoint_completed(done, end_time=103.0, path="checkpoints/chk-1")
    tracker.checkpoint_failed(failed, 104.0, types.FailureReason.TIMEOUT, "too slow")
    snapshot = tracker.snapshot(consecutive_failures=1, next_checkpoint_id=ID(3))
    assert snapshot.counts == stats.CheckpointCounts(triggered=2, completed=1, failed=1)
    assert snapshot.latest_completed is not None
    assert snapshot.latest_completed.duration == 3.0
    assert snapshot.latest_completed.path == "checkpoints/chk-1"
    assert snapshot.latest_failed is not None
    assert snapshot.latest_failed.failure_reason is types.FailureReason.TIMEOUT
    assert snapshot.latest_failed.failure_message == "too slow"
    assert snapshot.latest_in_progress is None
    assert (snapshot.consecutive_failures, snapshot.next_checkpoint_id) == (1, 3)
    assert [e.checkpoint_id for e in snapshot.history] == [2, 1]


def test_history_is_bounded_but_latest_are_kept() -> None:
    tracker = stats.StatsTracker(history_size=2)
    savepoint = started(tracker, 1, SP)
    tracker.checkpoint_completed(savepoint, 101.0, "sp-1")
    for checkpoint_id in (2, 3, 4):
        tracker.checkpoint_failed(
            started(tracker, checkpoint_id), 101.0, types.FailureReason.DECLINED, ""
        )
    running = started(tracker, 5)
    snapshot = tracker.snapshot()
    assert [e.checkpoint_id for e in snapshot.history] == [5, 4, 3]
    assert snapshot.latest_savepoint is not None
    assert snapshot.latest_savepoint.checkpoint_id == 1
    assert snapshot.entry(ID(1)) == snapshot.latest_savepoint
    assert snapshot.entry(ID(2)) is None
    assert snapshot.entry(running.checkpoint_id) is not None


def test_latest_completed_is_the_highest_id() -> None:
    tracker = stats.StatsTracker()
    savepoint, checkpoint = started(tracker, 1, SP), started(tracker, 2)
    tracker.checkpoint_completed(checkpoint, 101.0, "chk-2")
    tracker.checkpoint_completed(savepoint, 102.0, "sp-1")  # a slow savepoint finishing late
    latest = tracker.snapshot().latest_completed
    assert latest is not None
    assert latest.checkpoint_id == 2


def test_rejections_are_counted_without_an_entry() -> None:
    tracker = stats.StatsTracker()
    tracker.trigger_rejected(CP, types.FailureReason.MIN_PAUSE, "wait 2s", now=5.0)
    snapshot = tracker.snapshot()
    assert snapshot.counts.rejected == 1
    assert snapshot.counts.triggered == 0
    assert snapshot.history == ()
    assert snapshot.last_rejection == stats.TriggerRejection(
        CP, types.FailureReason.MIN_PAUSE, "wait 2s", 5.0
    )


def test_snapshot_is_not_changed_by_later_acks() -> None:
    tracker = stats.StatsTracker()
    checkpoint = started(tracker, 1)
    before = tracker.snapshot()
    checkpoint.acknowledge(testing.acknowledgement(ID(1), TASKS[0]), now=101.0)
    assert before.history[0].num_acknowledged == 0
