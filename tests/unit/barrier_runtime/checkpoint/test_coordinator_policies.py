"""Each coordinator policy, alone."""

from __future__ import annotations

import pytest

from barrier_runtime.checkpoint.policies import (
    barriers,
    concurrency,
    failures,
    min_pause,
    periodic,
    requests,
    retention,
    subsumption,
    timeout,
)
from barrier_runtime.core import types

CP = types.CheckpointKind.CHECKPOINT
SP = types.CheckpointKind.SAVEPOINT
R = types.FailureReason
ID = types.CheckpointId


class TestPeriodicTriggerPolicy:
    def test_first_checkpoint_is_due_one_interval_after_start(self) -> None:
        policy = periodic.PeriodicTriggerPolicy(interval=5.0)
        policy.start(now=100.0)
        assert not policy.is_due(104.999)
        assert policy.is_due(105.0)

    def test_schedule_counts_from_the_actual_trigger(self) -> None:
        policy = periodic.PeriodicTriggerPolicy(interval=5.0)
        policy.start(now=100.0)
        policy.checkpoint_triggered(now=108.0)  # a late tick
        assert policy.next_due == 113.0
        assert not policy.is_due(112.0)

    def test_restart_moves_the_schedule(self) -> None:
        policy = periodic.PeriodicTriggerPolicy(interval=5.0)
        policy.start(now=100.0)
        policy.start(now=200.0)
        assert not policy.is_due(201.0)
        assert policy.is_due(205.0)

    def test_rejects_non_positive_interval(self) -> None:
        with pytest.raises(ValueError, match="interval"):
            periodic.PeriodicTriggerPolicy(interval=0)


class TestMinPausePolicy:
    def test_nothing_to_wait_for_before_any_completion(self) -> None:
        assert min_pause.MinPausePolicy(10.0).allows(now=0.0)

    def test_pause_is_measured_from_the_completion(self) -> None:
        policy = min_pause.MinPausePolicy(10.0)
        policy.checkpoint_completed(now=50.0)
        assert policy.remaining(now=55.0) == 5.0
        assert not policy.allows(now=59.9)
        assert policy.allows(now=60.0)

    def test_an_older_completion_does_not_move_the_baseline_back(self) -> None:
        policy = min_pause.MinPausePolicy(10.0)
        policy.checkpoint_completed(now=50.0)
        policy.checkpoint_completed(now=40.0)
        assert not policy.allows(now=55.0)

    def test_zero_pause_always_allows(self) -> None:
        policy = min_pause.MinPausePolicy(0.0)
        policy.checkpoint_completed(now=50.0)
        assert policy.allows(now=50.0)

    def test_rejects_negative_pause(self) -> None:
        with pytest.raises(ValueError):
            min_pause.MinPausePolicy(-1.0)


class TestMaxConcurrentPolicy:
    @pytest.mark.parametrize(
        ("limit", "in_flight", "allowed"),
        [
            (1, 0, True),
            (1, 1, False),
            (3, 2, True),
            (3, 3, False),
            (3, 4, False),
        ],
    )
    def test_allows_below_the_limit(self, limit: int, in_flight: int, allowed: bool) -> None:
        assert concurrency.MaxConcurrentPolicy(limit).allows(in_flight) is allowed

    def test_rejects_zero(self) -> None:
        with pytest.raises(ValueError):
            concurrency.MaxConcurrentPolicy(0)


class TestTimeoutPolicy:
    def test_expires_at_the_deadline(self) -> None:
        policy = timeout.TimeoutPolicy(30.0)
        assert policy.deadline(10.0) == 40.0
        assert not policy.is_expired(10.0, 39.99)
        assert policy.is_expired(10.0, 40.0)

    def test_expiry_message_names_at_most_five_subtasks(self) -> None:
        message = timeout.TimeoutPolicy(1.0).expiry_message([f"t#{i}" for i in range(7)])
        assert "7 subtask(s)" in message
        assert "t#4" in message
        assert "t#5" not in message


class TestTolerableFailuresPolicy:
    @pytest.mark.parametrize("reason", [R.TIMEOUT, R.DECLINED, R.STORAGE_FAILURE, R.CORRUPT_STREAM])
    def test_counted_reasons(self, reason: types.FailureReason) -> None:
        assert failures.counts(CP, reason)

    @pytest.mark.parametrize(
        "reason",
        [
            R.SUBSUMED,
            R.CANCELLED,
            R.TASK_FAILURE,
            R.JOB_STOPPING,
            R.TASKS_NOT_RUNNING,
            R.TOO_MANY_PENDING,
            R.MIN_PAUSE,
        ],
    )
    def test_reasons_that_do_not_count(self, reason: types.FailureReason) -> None:
        assert not failures.counts(CP, reason)

    def test_every_reason_is_classified_on_purpose(self) -> None:
        not_counted = {
            R.SUBSUMED,
            R.CANCELLED,
            R.TASK_FAILURE,
            R.JOB_STOPPING,
            R.TASKS_NOT_RUNNING,
            R.TOO_MANY_PENDING,
            R.MIN_PAUSE,
        }
        assert failures.COUNTED_REASONS | not_counted == set(R)

    def test_savepoint_failures_never_count(self) -> None:
        assert not failures.counts(SP, R.TIMEOUT)
        policy = failures.TolerableFailuresPolicy(0)
        assert not policy.checkpoint_failed(SP, R.TIMEOUT)
        assert policy.consecutive_failures == 0

    def test_failover_requested_once_when_limit_exceeded(self) -> None:
        policy = failures.TolerableFailuresPolicy(2)
        decisions = [policy.checkpoint_failed(CP, R.TIMEOUT) for _ in range(5)]
        assert decisions == [False, False, True, False, False]
        assert policy.consecutive_failures == 5

    def test_zero_tolerance_fails_over_on_first_counted_failure(self) -> None:
        policy = failures.TolerableFailuresPolicy(0)
        assert not policy.checkpoint_failed(CP, R.SUBSUMED)
        assert policy.checkpoint_failed(CP, R.DECLINED)

    def test_completion_resets_the_count_and_rearms(self) -> None:
        policy = failures.TolerableFailuresPolicy(1)
        policy.checkpoint_failed(CP, R.TIMEOUT)
        assert policy.checkpoint_failed(CP, R.TIMEOUT)
        policy.checkpoint_completed()
        assert policy.consecutive_failures == 0
        assert not policy.checkpoint_failed(CP, R.TIMEOUT)
        assert policy.checkpoint_failed(CP, R.TIMEOUT)

    def test_failures_must_be_consecutive(self) -> None:
        policy = failures.TolerableFailuresPolicy(1)
        policy.checkpoint_failed(CP, R.TIMEOUT)
        policy.checkpoint_completed()
        assert not policy.checkpoint_failed(CP, R.TIMEOUT)

    def test_failover_message_says_how_many_and_what(self) -> None:
        policy = failures.TolerableFailuresPolicy(1)
        policy.checkpoint_failed(CP, R.TIMEOUT)
        policy.checkpoint_failed(CP, R.TIMEOUT)
        message = policy.failover_message("checkpoint 7 timeout")
        assert "2 times" in message
        assert "1 tolerated" in message
        assert "checkpoint 7 timeout" in message


class TestRetentionPolicy:
    def test_checkpoints_are_pruned_savepoints_are_not(self) -> None:
        policy = retention.RetentionPolicy(retained=4)
        assert policy.retained_after(CP) == 4
        assert policy.retained_after(SP) is None

    def test_rejects_zero(self) -> None:
        with pytest.raises(ValueError):
            retention.RetentionPolicy(0)


class TestBarrierPolicy:
    @pytest.mark.parametrize(
        ("unaligned", "aligned_timeout", "kind", "expected"),
        [
            (False, 0.0, CP, False),
            (True, 0.0, CP, True),
            (True, 2.0, CP, False),  # starts aligned, tasks switch after the timeout
            (True, 0.0, SP, False),  # savepoints always aligned
        ],
    )
    def test_unaligned_only_when_always_unaligned_checkpoint(
        self, unaligned: bool, aligned_timeout: float, kind: types.CheckpointKind, expected: bool
    ) -> None:
        config = types.CheckpointConfig(unaligned=unaligned, aligned_timeout=aligned_timeout)
        barrier = barriers.BarrierPolicy(config).barrier_for(ID(3), 12.5, kind)
        assert barrier == types.Barrier(ID(3), 12.5, kind, unaligned=expected)


class TestSubsumption:
    def test_older_checkpoints_are_subsumed(self) -> None:
        assert subsumption.subsumes(ID(5), ID(4), CP)

    def test_newer_or_same_are_not(self) -> None:
        assert not subsumption.subsumes(ID(5), ID(5), CP)
        assert not subsumption.subsumes(ID(5), ID(6), CP)

    def test_savepoints_are_never_subsumed(self) -> None:
        assert not subsumption.subsumes(ID(5), ID(1), SP)


class TestTriggerRequestDecider:
    def decider(
        self, interval: float = 1.0, min_pause: float = 0.0, max_concurrent: int = 1
    ) -> requests.TriggerRequestDecider:
        config = types.CheckpointConfig(
            interval=interval, min_pause=min_pause, max_concurrent=max_concurrent
        )
        decider = requests.TriggerRequestDecider(config)
        decider.start(now=0.0)
        return decider

    def test_periodic_waits_for_the_interval(self) -> None:
        decider = self.decider(interval=10.0)
        assert decider.decide_periodic(9.0, 0).verdict is requests.Verdict.WAIT
        assert decider.decide_periodic(10.0, 0).verdict is requests.Verdict.GO

    def test_periodic_waits_for_a_free_slot(self) -> None:
        decider = self.decider(interval=1.0, max_concurrent=2)
        assert decider.decide_periodic(5.0, 2).verdict is requests.Verdict.WAIT
        assert decider.decide_periodic(5.0, 1).verdict is requests.Verdict.GO

    def test_periodic_waits_for_min_pause(self) -> None:
        decider = self.decider(interval=1.0, min_pause=3.0)
        decider.checkpoint_completed(now=5.0)
        decision = decider.decide_periodic(7.0, 0)
        assert decision.verdict is requests.Verdict.WAIT
        assert decision.reason is None
        assert decider.decide_periodic(8.0, 0).verdict is requests.Verdict.GO

    def test_manual_checkpoint_rejected_when_too_many_pending(self) -> None:
        decision = self.decider().decide_manual(CP, 0.0, in_flight=1)
        assert decision.verdict is requests.Verdict.REJECT
        assert decision.reason is R.TOO_MANY_PENDING
        assert "max_concurrent=1" in decision.message

    def test_manual_checkpoint_rejected_during_min_pause(self) -> None:
        decider = self.decider(min_pause=3.0)
        decider.checkpoint_completed(now=5.0)
        decision = decider.decide_manual(CP, 6.0, in_flight=0)
        assert decision.reason is R.MIN_PAUSE
        assert decider.decide_manual(CP, 8.0, in_flight=0).verdict is requests.Verdict.GO

    def test_manual_checkpoint_does_not_wait_for_the_interval(self) -> None:
        assert self.decider(interval=100.0).decide_manual(CP, 0.0, 0).verdict is (
            requests.Verdict.GO
        )

    def test_savepoints_are_forced(self) -> None:
        decider = self.decider(min_pause=3.0)
        decider.checkpoint_completed(now=5.0)
        assert decider.decide_manual(SP, 5.0, in_flight=7).verdict is requests.Verdict.GO

    def test_checkpoint_triggers_move_the_schedule_savepoints_do_not(self) -> None:
        decider = self.decider(interval=10.0)
        decider.checkpoint_triggered(SP, now=8.0)
        assert decider.next_periodic_due == 10.0
        decider.checkpoint_triggered(CP, now=8.0)
        assert decider.next_periodic_due == 18.0
