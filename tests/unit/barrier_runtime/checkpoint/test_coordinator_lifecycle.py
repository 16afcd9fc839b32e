"""The life of a checkpoint through the coordinator: trigger, acks, commit, complete or abort."""

from __future__ import annotations

from barrier_runtime_testing import checkpoint as testing

from barrier_runtime.checkpoint import pending, stats
from barrier_runtime.core import metadata, types
from barrier_runtime.storage import errors

ID = types.CheckpointId
CP = types.CheckpointKind.CHECKPOINT
SP = types.CheckpointKind.SAVEPOINT
R = types.FailureReason


def harness(config: types.CheckpointConfig) -> testing.CoordinatorHarness:
    return testing.CoordinatorHarness.create(config)


class TestTriggerAckComplete:
    def test_trigger_delivers_a_barrier_with_the_next_id(self) -> None:
        h = testing.CoordinatorHarness.create(first_checkpoint_id=42, start=500.0)
        outcome = h.coordinator.trigger_checkpoint()
        assert outcome.ok
        assert outcome.checkpoint_id == 42
        assert h.gateway.barriers == [types.Barrier(ID(42), 500.0, CP, unaligned=False)]
        assert h.coordinator.next_checkpoint_id == 43

    def test_completes_when_every_task_acked(self) -> None:
        h = testing.CoordinatorHarness.create(tasks=3)
        checkpoint_id = h.coordinator.trigger_checkpoint().checkpoint_id
        h.clock.advance(1.0)
        h.ack_all(checkpoint_id, h.tasks[:2])
        assert h.store.committed == {}
        assert h.gateway.completed == []
        h.clock.advance(1.0)
        h.ack_all(checkpoint_id, h.tasks[2:])
        assert list(h.store.committed) == [1]
        document = h.store.committed[ID(1)]
        assert (document.trigger_time, document.completion_time) == (1000.0, 1002.0)
        assert len(document.state_handles) == 3
        assert h.gateway.completed == [document]
        assert h.gateway.aborted == []

    def test_wait_for_reports_the_committed_path(self) -> None:
        h = testing.CoordinatorHarness.create()
        checkpoint_id = h.coordinator.trigger_checkpoint().checkpoint_id
        h.ack_all(checkpoint_id)
        outcome = h.coordinator.wait_for(ID(1), timeout=0)
        assert outcome.completed
        assert outcome.path == "checkpoints/chk-0000000001"
        assert outcome.metadata == h.store.committed[ID(1)]

    def test_stats_after_completion(self) -> None:
        h = testing.CoordinatorHarness.create()
        checkpoint_id = h.coordinator.trigger_checkpoint().checkpoint_id
        h.clock.advance(2.0)
        h.ack_all(checkpoint_id)
        snapshot = h.coordinator.stats()
        assert snapshot.counts.completed == 1
        assert snapshot.counts.in_progress == 0
        entry = snapshot.latest_completed
        assert entry is not None
        assert entry.status is stats.CheckpointStatus.COMPLETED
        assert entry.duration == 2.0
        assert entry.state_size == 20
        assert set(entry.ack_times) == set(h.tasks)
        assert snapshot.next_checkpoint_id == 2

    def test_unaligned_config_gives_unaligned_checkpoint_barriers_only(self) -> None:
        h = harness(types.CheckpointConfig(unaligned=True, max_concurrent=2))
        h.coordinator.trigger_checkpoint(CP)
        h.coordinator.trigger_checkpoint(SP)
        assert [b.unaligned for b in h.gateway.barriers] == [True, False]


class TestAckResults:
    def test_duplicate_ack(self) -> None:
        h = testing.CoordinatorHarness.create()
        checkpoint_id = h.coordinator.trigger_checkpoint().checkpoint_id
        assert h.ack(checkpoint_id, h.tasks[0]) is pending.AckResult.SUCCESS
        assert h.ack(checkpoint_id, h.tasks[0]) is pending.AckResult.DUPLICATE

    def test_ack_of_never_triggered_id_is_unknown(self) -> None:
        h = testing.CoordinatorHarness.create(first_checkpoint_id=5)
        h.coordinator.trigger_checkpoint()
        assert h.ack(6, h.tasks[0]) is pending.AckResult.UNKNOWN
        assert h.ack(4, h.tasks[0]) is pending.AckResult.UNKNOWN

    def test_ack_from_unexpected_task_is_unknown(self) -> None:
        h = testing.CoordinatorHarness.create(tasks=1)
        checkpoint_id = h.coordinator.trigger_checkpoint().checkpoint_id
        stranger = metadata.TaskKey(types.TaskId("map"), 7)
        assert h.ack(checkpoint_id, stranger) is pending.AckResult.UNKNOWN
        assert h.store.committed == {}

    def test_ack_of_aborted_checkpoint_is_discarded(self) -> None:
        h = testing.CoordinatorHarness.create()
        checkpoint_id = h.coordinator.trigger_checkpoint().checkpoint_id
        h.coordinator.decline(ID(1), h.tasks[1])
        assert h.ack(checkpoint_id, h.tasks[0]) is pending.AckResult.DISCARDED

    def test_late_ack_of_completed_checkpoint_is_duplicate(self) -> None:
        h = testing.CoordinatorHarness.create()
        checkpoint_id = h.coordinator.trigger_checkpoint().checkpoint_id
        h.ack_all(checkpoint_id)
        assert h.ack(checkpoint_id, h.tasks[0]) is pending.AckResult.DUPLICATE
        assert h.gateway.completed_ids == [1]


class TestDecline:
    def test_decline_aborts_and_notifies_once(self) -> None:
        h = testing.CoordinatorHarness.create()
        h.coordinator.trigger_checkpoint()
        h.coordinator.decline(ID(1), h.tasks[0], message="disk full")
        h.coordinator.decline(ID(1), h.tasks[1])
        assert h.gateway.aborted == [(ID(1), R.DECLINED)]
        outcome = h.coordinator.wait_for(ID(1), timeout=0)
        assert outcome.failure is R.DECLINED
        assert "map#0" in outcome.message
        assert "disk full" in outcome.message

    def test_decline_keeps_the_given_reason(self) -> None:
        h = testing.CoordinatorHarness.create()
        h.coordinator.trigger_checkpoint()
        h.coordinator.decline(ID(1), h.tasks[0], R.CORRUPT_STREAM, "barrier twice")
        assert h.gateway.aborted == [(ID(1), R.CORRUPT_STREAM)]

    def test_decline_from_unexpected_task_or_unknown_id_is_ignored(self) -> None:
        h = testing.CoordinatorHarness.create()
        h.coordinator.trigger_checkpoint()
        h.coordinator.decline(ID(1), metadata.TaskKey(types.TaskId("x"), 0))
        h.coordinator.decline(ID(9), h.tasks[0])
        assert h.gateway.aborted == []
        h.ack_all(1)
        assert h.gateway.completed_ids == [1]

    def test_decline_after_completion_changes_nothing(self) -> None:
        h = testing.CoordinatorHarness.create()
        h.coordinator.trigger_checkpoint()
        h.ack_all(1)
        h.coordinator.decline(ID(1), h.tasks[0])
        assert h.gateway.aborted == []
        assert h.coordinator.wait_for(ID(1), 0).completed


class TestSubsumption:
    def test_completing_n_subsumes_older_pending_checkpoints(self) -> None:
        h = harness(types.CheckpointConfig(max_concurrent=3))
        for _ in range(3):
            h.coordinator.trigger_checkpoint()
        h.ack_all(3)
        assert h.gateway.completed_ids == [3]
        assert sorted(h.gateway.aborted) == [(ID(1), R.SUBSUMED), (ID(2), R.SUBSUMED)]
        assert h.ack(1, h.tasks[0]) is pending.AckResult.DISCARDED

    def test_newer_pending_checkpoints_survive(self) -> None:
        h = harness(types.CheckpointConfig(max_concurrent=2))
        h.coordinator.trigger_checkpoint()
        h.coordinator.trigger_checkpoint()
        h.ack_all(1)
        assert h.gateway.aborted == []
        h.ack_all(2)
        assert h.gateway.completed_ids == [1, 2]

    def test_savepoints_are_not_subsumed(self) -> None:
        h = harness(types.CheckpointConfig(max_concurrent=2))
        h.coordinator.trigger_checkpoint(SP)
        h.coordinator.trigger_checkpoint(CP)
        h.ack_all(2)
        assert h.gateway.aborted == []
        h.ack_all(1)
        assert h.gateway.completed_ids == [2, 1]

    def test_subsumption_does_not_count_as_failure(self) -> None:
        h = harness(types.CheckpointConfig(max_concurrent=5, tolerable_failures=0))
        for _ in range(5):
            h.coordinator.trigger_checkpoint()
        h.ack_all(5)
        assert h.failovers == []
        assert h.coordinator.stats().consecutive_failures == 0


class TestSavepoints:
    def test_savepoint_completes_with_its_kind_and_no_retention(self) -> None:
        h = testing.CoordinatorHarness.create()
        outcome = h.coordinator.trigger_checkpoint(SP)
        assert outcome.kind is SP
        h.ack_all(outcome.checkpoint_id)
        assert h.store.committed[ID(1)].kind is SP
        assert h.store.retention_calls == []
        snapshot = h.coordinator.stats()
        assert snapshot.latest_savepoint is not None
        assert snapshot.latest_savepoint.checkpoint_id == 1

    def test_savepoint_is_allowed_while_a_checkpoint_is_pending(self) -> None:
        h = harness(types.CheckpointConfig(min_pause=100.0))
        h.coordinator.trigger_checkpoint()
        outcome = h.coordinator.trigger_checkpoint(SP)
        assert outcome.ok
        assert h.gateway.triggered_ids == [1, 2]


class TestRetention:
    def test_retention_applied_after_each_checkpoint(self) -> None:
        h = harness(types.CheckpointConfig(retained=5))
        for checkpoint_id in (1, 2):
            h.coordinator.trigger_checkpoint()
            h.ack_all(checkpoint_id)
        assert h.store.retention_calls == [5, 5]

    def test_retention_failure_does_not_fail_the_checkpoint(self) -> None:
        h = testing.CoordinatorHarness.create()
        h.store.retention_error = errors.StorageUnavailableError("S3 down")
        h.coordinator.trigger_checkpoint()
        h.ack_all(1)
        assert h.gateway.completed_ids == [1]
        assert h.coordinator.wait_for(ID(1), 0).completed
        assert h.coordinator.stats().counts.failed == 0


class TestStorageFailure:
    def test_commit_failure_aborts_with_storage_failure(self) -> None:
        h = testing.CoordinatorHarness.create()
        h.store.fail_next_commits(errors.StorageUnavailableError("connection refused"))
        h.coordinator.trigger_checkpoint()
        h.ack_all(1)
        assert h.gateway.completed == []
        assert h.gateway.aborted == [(ID(1), R.STORAGE_FAILURE)]
        assert h.store.retention_calls == []
        outcome = h.coordinator.wait_for(ID(1), 0)
        assert outcome.failure is R.STORAGE_FAILURE
        assert "connection refused" in outcome.message

    def test_already_committed_id_names_another_coordinator(self) -> None:
        h = testing.CoordinatorHarness.create()
        h.store.fail_next_commits(errors.CheckpointAlreadyExistsError("412"))
        h.coordinator.trigger_checkpoint()
        h.ack_all(1)
        outcome = h.coordinator.wait_for(ID(1), 0)
        assert outcome.failure is R.STORAGE_FAILURE
        assert "another coordinator" in outcome.message

    def test_unexpected_store_error_still_settles_the_checkpoint(self) -> None:
        h = testing.CoordinatorHarness.create()
        h.store.fail_next_commits(RuntimeError("bug in adapter"))
        h.coordinator.trigger_checkpoint()
        h.ack_all(1)
        assert h.gateway.aborted == [(ID(1), R.STORAGE_FAILURE)]
        assert h.coordinator.stats().counts.in_progress == 0

    def test_next_checkpoint_uses_a_new_id_after_storage_failure(self) -> None:
        h = testing.CoordinatorHarness.create()
        h.store.fail_next_commits(errors.StorageError("boom"))
        h.coordinator.trigger_checkpoint()
        h.ack_all(1)
        assert h.coordinator.trigger_checkpoint().checkpoint_id == 2
        h.ack_all(2)
        assert list(h.store.committed) == [2]


class TestTriggerDeliveryFailure:
    def test_gateway_failure_aborts_with_tasks_not_running(self) -> None:
        h = testing.CoordinatorHarness.create()
        h.gateway.trigger_error = ConnectionError("worker 1 gone")
        outcome = h.coordinator.trigger_checkpoint()
        assert not outcome.ok
        assert outcome.checkpoint_id == 1
        assert outcome.failure is R.TASKS_NOT_RUNNING
        assert "worker 1 gone" in outcome.message
        assert h.gateway.aborted == [(ID(1), R.TASKS_NOT_RUNNING)]
        h.gateway.trigger_error = None
        assert h.coordinator.trigger_checkpoint().checkpoint_id == 2  # id 1 is never reused


class TestNotificationFailures:
    def test_failing_complete_notification_does_not_undo_completion(self) -> None:
        class BrokenGateway(testing.RecordingGateway):
            def notify_complete(self, metadata: metadata.CheckpointMetadata) -> None:
                raise ConnectionError("sink unreachable")

        h = testing.CoordinatorHarness.create(gateway=BrokenGateway())
        h.coordinator.trigger_checkpoint()
        h.ack_all(1)
        assert h.coordinator.wait_for(ID(1), 0).completed
        assert h.store.retention_calls == [3]
