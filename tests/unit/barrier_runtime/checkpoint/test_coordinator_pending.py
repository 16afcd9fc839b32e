"""PendingCheckpoint and CheckpointRegistry: bookkeeping of one and of all checkpoints."""

from __future__ import annotations

import pytest
from barrier_runtime_testing import checkpoint as testing

from barrier_runtime.checkpoint import outcomes, pending, registry
from barrier_runtime.core import metadata, types

ID = types.CheckpointId
TASKS = testing.task_keys(3)


def make_pending(
    checkpoint_id: int = 1, kind: types.CheckpointKind = types.CheckpointKind.CHECKPOINT
) -> pending.PendingCheckpoint:
    return pending.PendingCheckpoint(
        types.Barrier(ID(checkpoint_id), 100.0, kind), frozenset(TASKS)
    )


FINGERPRINT = metadata.JobFingerprint((types.StepId("map"),), 128, 3)


class TestPendingCheckpoint:
    def test_accepts_each_expected_task_once(self) -> None:
        checkpoint = make_pending()
        first = checkpoint.acknowledge(testing.acknowledgement(ID(1), TASKS[0]), now=101.0)
        again = checkpoint.acknowledge(testing.acknowledgement(ID(1), TASKS[0]), now=102.0)
        assert (first, again) == (pending.AckResult.SUCCESS, pending.AckResult.DUPLICATE)
        assert checkpoint.ack_times == {TASKS[0]: 101.0}

    def test_unexpected_task_is_unknown(self) -> None:
        stranger = metadata.TaskKey(types.TaskId("other"), 0)
        result = make_pending().acknowledge(testing.acknowledgement(ID(1), stranger), now=1.0)
        assert result is pending.AckResult.UNKNOWN

    def test_ack_of_another_checkpoint_is_a_bug(self) -> None:
        with pytest.raises(ValueError, match="checkpoint 2"):
            make_pending(1).acknowledge(testing.acknowledgement(ID(2), TASKS[0]), now=1.0)

    def test_fully_acknowledged_only_when_all_tasks_acked(self) -> None:
        checkpoint = make_pending()
        for task in TASKS[:2]:
            checkpoint.acknowledge(testing.acknowledgement(ID(1), task, size=5), now=1.0)
        complete_before = checkpoint.is_fully_acknowledged
        assert checkpoint.missing_tasks == [TASKS[2]]
        checkpoint.acknowledge(testing.acknowledgement(ID(1), TASKS[2], size=5), now=1.0)
        assert not complete_before
        assert checkpoint.is_fully_acknowledged
        assert checkpoint.missing_tasks == []
        assert checkpoint.state_size == 15

    def test_alignment_is_the_longest_reported(self) -> None:
        checkpoint = make_pending()
        for task, seconds in zip(TASKS, (0.1, 0.7, 0.3), strict=True):
            ack = metadata.TaskAcknowledgement(
                ID(1), task, metrics=metadata.AckMetrics(alignment_duration=seconds)
            )
            checkpoint.acknowledge(ack, now=1.0)
        assert checkpoint.alignment_duration == 0.7

    def test_commit_builds_metadata_from_all_acks(self) -> None:
        checkpoint = make_pending(4, types.CheckpointKind.SAVEPOINT)
        for task in TASKS:
            checkpoint.acknowledge(testing.acknowledgement(ID(4), task), now=1.0)
        document = checkpoint.start_commit(completion_time=105.0, fingerprint=FINGERPRINT)
        assert checkpoint.is_committing
        assert document.checkpoint_id == 4
        assert document.kind is types.CheckpointKind.SAVEPOINT
        assert (document.trigger_time, document.completion_time) == (100.0, 105.0)
        assert len(document.state_handles) == 3

    def test_cannot_commit_with_missing_acks(self) -> None:
        with pytest.raises(RuntimeError, match="map#0"):
            make_pending().start_commit(1.0, FINGERPRINT)

    def test_cannot_commit_twice(self) -> None:
        checkpoint = make_pending()
        for task in TASKS:
            checkpoint.acknowledge(testing.acknowledgement(ID(1), task), now=1.0)
        checkpoint.start_commit(1.0, FINGERPRINT)
        with pytest.raises(RuntimeError, match="already"):
            checkpoint.start_commit(1.0, FINGERPRINT)

    def test_needs_tasks(self) -> None:
        with pytest.raises(ValueError):
            pending.PendingCheckpoint(types.Barrier(ID(1), 0.0), frozenset())

    def test_str_names_kind_and_id(self) -> None:
        assert str(make_pending(9, types.CheckpointKind.SAVEPOINT)) == "savepoint 9"


class TestCheckpointRegistry:
    def test_ids_start_at_first_and_strictly_increase(self) -> None:
        table = registry.CheckpointRegistry(first_checkpoint_id=42)
        assert [table.allocate_id() for _ in range(3)] == [42, 43, 44]
        assert table.next_id == 45

    def test_ids_start_at_one_at_least(self) -> None:
        with pytest.raises(ValueError):
            registry.CheckpointRegistry(first_checkpoint_id=0)

    def test_finish_moves_pending_to_outcomes(self) -> None:
        table = registry.CheckpointRegistry(1)
        checkpoint = make_pending(table.allocate_id())
        table.add(checkpoint)
        assert table.in_flight == 1
        outcome = outcomes.CheckpointOutcome.failed_with(
            ID(1), checkpoint.kind, types.FailureReason.TIMEOUT, "slow"
        )
        table.finish(checkpoint, outcome)
        assert table.in_flight == 0
        assert table.get(ID(1)) is None
        assert table.outcome(ID(1)) == outcome
        with pytest.raises(KeyError):
            table.finish(checkpoint, outcome)

    def test_pending_checkpoints_oldest_first(self) -> None:
        table = registry.CheckpointRegistry(1)
        for checkpoint_id in (3, 1, 2):
            table.add(make_pending(checkpoint_id))
        assert [c.checkpoint_id for c in table.pending_checkpoints()] == [1, 2, 3]

    def test_late_ack_results(self) -> None:
        table = registry.CheckpointRegistry(10)
        aborted, completed = make_pending(table.allocate_id()), make_pending(table.allocate_id())
        table.add(aborted)
        table.add(completed)
        table.finish(
            aborted,
            outcomes.CheckpointOutcome.failed_with(
                ID(10), aborted.kind, types.FailureReason.DECLINED, ""
            ),
        )
        document = metadata.CheckpointMetadata(ID(11), completed.kind, 1.0, 2.0, FINGERPRINT)
        table.finish(completed, outcomes.CheckpointOutcome.completed_at(document, "p"))
        assert table.late_ack_result(ID(10)) is pending.AckResult.DISCARDED
        assert table.late_ack_result(ID(11)) is pending.AckResult.DUPLICATE
        assert table.late_ack_result(ID(12)) is pending.AckResult.UNKNOWN  # never triggered
        assert table.late_ack_result(ID(9)) is pending.AckResult.UNKNOWN  # before our time

    def test_outcome_memory_is_bounded(self) -> None:
        table = registry.CheckpointRegistry(1, outcome_memory=2)
        for _ in range(3):
            checkpoint = make_pending(table.allocate_id())
            table.add(checkpoint)
            table.finish(
                checkpoint,
                outcomes.CheckpointOutcome.failed_with(
                    checkpoint.checkpoint_id, checkpoint.kind, types.FailureReason.TIMEOUT, ""
                ),
            )
        assert table.outcome(ID(1)) is None
        assert table.outcome(ID(3)) is not None
