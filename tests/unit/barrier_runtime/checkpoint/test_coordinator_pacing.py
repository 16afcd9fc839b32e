"""Periodic triggering through tick(): interval, min pause, max concurrent, timeout."""

from __future__ import annotations

from barrier_runtime_testing import checkpoint as testing

from barrier_runtime.checkpoint import stats
from barrier_runtime.core import types

ID = types.CheckpointId
CP = types.CheckpointKind.CHECKPOINT
SP = types.CheckpointKind.SAVEPOINT
R = types.FailureReason


def harness(config: types.CheckpointConfig) -> testing.CoordinatorHarness:
    return testing.CoordinatorHarness.create(config, start=0.0)


class TestInterval:
    def test_periodic_checkpoint_every_interval(self) -> None:
        h = harness(types.CheckpointConfig(interval=10.0, max_concurrent=5))
        triggered_at = []
        for _ in range(35):
            h.clock.advance(1.0)
            before = len(h.gateway.barriers)
            h.coordinator.tick()
            if len(h.gateway.barriers) > before:
                triggered_at.append(h.clock.now())
        assert triggered_at == [10.0, 20.0, 30.0]
        assert h.gateway.triggered_ids == [1, 2, 3]

    def test_nothing_before_the_first_interval(self) -> None:
        h = harness(types.CheckpointConfig(interval=10.0))
        h.clock.advance(9.0)
        h.coordinator.tick()
        assert h.gateway.barriers == []

    def test_manual_checkpoint_restarts_the_interval(self) -> None:
        h = harness(types.CheckpointConfig(interval=10.0))
        h.clock.advance(8.0)
        h.coordinator.trigger_checkpoint()
        h.ack_all(1)
        h.clock.advance(2.0)
        h.coordinator.tick()
        assert h.gateway.triggered_ids == [1]
        h.clock.advance(8.0)
        h.coordinator.tick()
        assert h.gateway.triggered_ids == [1, 2]

    def test_periodic_barrier_timestamp_is_the_trigger_time(self) -> None:
        h = harness(types.CheckpointConfig(interval=10.0))
        h.clock.advance(12.5)
        h.coordinator.tick()
        assert h.gateway.barriers == [types.Barrier(ID(1), 12.5, CP)]


class TestMaxConcurrent:
    def test_periodic_waits_for_a_free_slot_then_triggers(self) -> None:
        h = harness(types.CheckpointConfig(interval=1.0, max_concurrent=1))
        h.clock.advance(1.0)
        h.coordinator.tick()
        for _ in range(3):
            h.clock.advance(1.0)
            h.coordinator.tick()
        assert h.gateway.triggered_ids == [1]
        assert h.coordinator.stats().counts.rejected == 0  # periodic waits, it is not refused
        h.ack_all(1)
        h.coordinator.tick()
        assert h.gateway.triggered_ids == [1, 2]

    def test_manual_trigger_refused_with_too_many_pending(self) -> None:
        h = harness(types.CheckpointConfig(max_concurrent=2))
        h.coordinator.trigger_checkpoint()
        h.coordinator.trigger_checkpoint()
        outcome = h.coordinator.trigger_checkpoint()
        assert not outcome.ok
        assert outcome.checkpoint_id is None
        assert outcome.failure is R.TOO_MANY_PENDING
        assert h.coordinator.next_checkpoint_id == 3  # no id used by a refusal
        snapshot = h.coordinator.stats()
        assert snapshot.counts.rejected == 1
        assert snapshot.last_rejection is not None
        assert snapshot.last_rejection.reason is R.TOO_MANY_PENDING

    def test_refusal_does_not_count_towards_failover(self) -> None:
        h = harness(types.CheckpointConfig(tolerable_failures=0))
        h.coordinator.trigger_checkpoint()
        for _ in range(3):
            h.coordinator.trigger_checkpoint()
        assert h.failovers == []
        assert h.gateway.aborted == []

    def test_a_pending_savepoint_takes_a_slot(self) -> None:
        h = harness(types.CheckpointConfig(interval=1.0))
        h.coordinator.trigger_checkpoint(SP)
        h.clock.advance(5.0)
        h.coordinator.tick()
        assert h.gateway.triggered_ids == [1]


class TestMinPause:
    def test_periodic_waits_min_pause_after_completion(self) -> None:
        h = harness(types.CheckpointConfig(interval=2.0, min_pause=5.0))
        h.clock.advance(2.0)
        h.coordinator.tick()
        h.clock.advance(3.0)  # t=5: the checkpoint takes 3s
        h.ack_all(1)
        h.clock.advance(4.9)  # interval long passed, pause not
        h.coordinator.tick()
        assert h.gateway.triggered_ids == [1]
        h.clock.advance(0.1)  # t=10 = completion + min_pause
        h.coordinator.tick()
        assert h.gateway.triggered_ids == [1, 2]

    def test_pause_counts_from_the_end_not_the_trigger(self) -> None:
        h = harness(types.CheckpointConfig(interval=1.0, min_pause=5.0, timeout=100.0))
        h.clock.advance(1.0)
        h.coordinator.tick()
        h.clock.advance(20.0)  # a slow checkpoint: trigger + min_pause is long past
        h.ack_all(1)
        h.clock.advance(1.0)
        h.coordinator.tick()
        assert h.gateway.triggered_ids == [1]

    def test_manual_checkpoint_refused_during_pause(self) -> None:
        h = harness(types.CheckpointConfig(min_pause=5.0))
        h.coordinator.trigger_checkpoint()
        h.ack_all(1)
        h.clock.advance(1.0)
        outcome = h.coordinator.trigger_checkpoint()
        assert outcome.failure is R.MIN_PAUSE
        assert "4.000s" in outcome.message
        h.clock.advance(4.0)
        assert h.coordinator.trigger_checkpoint().ok

    def test_savepoint_ignores_the_pause(self) -> None:
        h = harness(types.CheckpointConfig(min_pause=5.0))
        h.coordinator.trigger_checkpoint()
        h.ack_all(1)
        assert h.coordinator.trigger_checkpoint(SP).ok

    def test_a_failed_checkpoint_does_not_start_a_pause(self) -> None:
        h = harness(types.CheckpointConfig(min_pause=5.0))
        h.coordinator.trigger_checkpoint()
        h.coordinator.decline(ID(1), h.tasks[0])
        assert h.coordinator.trigger_checkpoint().ok


class TestTimeout:
    def test_expired_checkpoint_is_aborted_on_tick(self) -> None:
        h = harness(types.CheckpointConfig(interval=1000.0, timeout=10.0))
        h.coordinator.trigger_checkpoint()
        h.ack(1, h.tasks[0])
        h.clock.advance(9.9)
        h.coordinator.tick()
        assert h.gateway.aborted == []
        h.clock.advance(0.1)
        h.coordinator.tick()
        assert h.gateway.aborted == [(ID(1), R.TIMEOUT)]
        outcome = h.coordinator.wait_for(ID(1), 0)
        assert outcome.failure is R.TIMEOUT
        assert "map#1" in outcome.message  # names the subtask that did not answer
        assert "map#0" not in outcome.message

    def test_timeout_is_notified_once(self) -> None:
        h = harness(types.CheckpointConfig(interval=1000.0, timeout=10.0))
        h.coordinator.trigger_checkpoint()
        for _ in range(3):
            h.clock.advance(10.0)
            h.coordinator.tick()
        assert h.gateway.aborted == [(ID(1), R.TIMEOUT)]
        assert h.coordinator.stats().counts.failed == 1

    def test_expiry_frees_the_slot_for_the_same_tick(self) -> None:
        h = harness(types.CheckpointConfig(interval=5.0, timeout=7.0))
        h.clock.advance(5.0)
        h.coordinator.tick()
        h.clock.advance(7.0)
        h.coordinator.tick()
        assert h.gateway.aborted == [(ID(1), R.TIMEOUT)]
        assert h.gateway.triggered_ids == [1, 2]

    def test_late_acks_after_timeout_are_discarded(self) -> None:
        h = harness(types.CheckpointConfig(interval=1000.0, timeout=1.0))
        h.coordinator.trigger_checkpoint()
        h.clock.advance(1.0)
        h.coordinator.tick()
        assert h.ack(1, h.tasks[0]).name == "DISCARDED"
        assert h.store.committed == {}

    def test_failed_entry_in_stats(self) -> None:
        h = harness(types.CheckpointConfig(interval=1000.0, timeout=1.0))
        h.coordinator.trigger_checkpoint()
        h.clock.advance(1.0)
        h.coordinator.tick()
        latest = h.coordinator.stats().latest_failed
        assert latest is not None
        assert latest.status is stats.CheckpointStatus.FAILED
        assert latest.failure_reason is R.TIMEOUT
        assert latest.duration == 1.0
