"""Restart policies: fixed budget, exponential backoff with jitter, failure-rate window, reset."""

from __future__ import annotations

import pytest

from barrier_runtime.core.clock import ManualClock
from barrier_runtime.driver.restart import (
    Backoff,
    ExponentialDelayRestartPolicy,
    FixedDelayRestartPolicy,
)


def _policy(clock, *, max_restarts=3, window=100.0, reset_after=50.0, jitter=0.0, rnd=0.5):
    policy = ExponentialDelayRestartPolicy(
        max_restarts=max_restarts,
        window=window,
        backoff=Backoff(initial=1.0, max=8.0, multiplier=2.0, jitter=jitter),
        reset_after=reset_after,
        unit_random=lambda: rnd,
    )
    policy.attempt_started(clock.now())
    return policy


def _fail(policy, clock, after=1.0):
    clock.advance(after)
    decision = policy.attempt_failed(clock.now())
    policy.attempt_started(clock.now() + decision.delay)
    return decision


def test_fixed_delay_allows_exactly_max_restarts() -> None:
    policy = FixedDelayRestartPolicy(2, delay=0.5)
    decisions = [policy.attempt_failed(t) for t in (1, 2, 3)]
    assert [d.restart for d in decisions] == [True, True, False]
    assert decisions[0].delay == 0.5
    assert decisions[2].reason == "job failed 3 times, more than the restart budget of 2"


def test_fixed_delay_with_zero_budget_gives_up_at_once() -> None:
    decision = FixedDelayRestartPolicy(0).attempt_failed(0)
    assert not decision.restart
    assert decision.reason == "job failed once, more than the restart budget of 0"


def test_delays_grow_exponentially_up_to_the_cap() -> None:
    clock = ManualClock()
    policy = _policy(clock, max_restarts=10, window=1000)
    delays = [_fail(policy, clock).delay for _ in range(6)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


@pytest.mark.parametrize(("rnd", "expected"), [(0.0, 0.8), (0.5, 1.0), (0.999999, 1.2)])
def test_jitter_spreads_the_delay_symmetrically(rnd, expected) -> None:
    clock = ManualClock()
    policy = _policy(clock, jitter=0.2, rnd=rnd)
    assert _fail(policy, clock).delay == pytest.approx(expected, abs=1e-5)


def test_gives_up_on_the_failure_beyond_the_budget_within_the_window() -> None:
    clock = ManualClock()
    policy = _policy(clock, max_restarts=3, window=100)
    assert all(_fail(policy, clock, after=10).restart for _ in range(3))
    decision = _fail(policy, clock, after=10)
    assert not decision.restart
    assert decision.reason == "job failed 4 times within 100s, more than the restart budget of 3"


def test_failures_older_than_the_window_no_longer_count() -> None:
    clock = ManualClock()
    policy = _policy(clock, max_restarts=2, window=100, reset_after=1000)
    assert _fail(policy, clock, after=10).restart  # t=10
    assert _fail(policy, clock, after=10).restart  # t=20
    assert _fail(policy, clock, after=95).restart  # t=115: t=10 dropped out
    assert policy.failures_in_window == 2
    assert not _fail(policy, clock, after=1).restart  # t=116: 20, 115, 116


def test_a_stable_attempt_resets_the_backoff_but_still_counts() -> None:
    clock = ManualClock()
    policy = _policy(clock, max_restarts=10, window=1000, reset_after=50)
    assert [_fail(policy, clock).delay for _ in range(3)] == [1.0, 2.0, 4.0]
    stable = _fail(policy, clock, after=60)
    assert stable.delay == 1.0
    assert policy.failures_in_window == 4
    assert _fail(policy, clock).delay == 2.0


def test_backoff_validation() -> None:
    with pytest.raises(ValueError, match="initial <= max"):
        Backoff(initial=10, max=1)
    with pytest.raises(ValueError, match="jitter"):
        Backoff(jitter=1.5)
    with pytest.raises(ValueError, match="multiplier"):
        Backoff(multiplier=0.5)


def test_failures_of_earlier_drivers_count_in_the_window() -> None:
    """The operator passes the job's recent failures to each new driver: one budget."""
    policy = ExponentialDelayRestartPolicy(
        max_restarts=3,
        window=100,
        backoff=Backoff(initial=1, max=1, jitter=0),
        reset_after=50,
        prior_failures=[10.0, 20.0, 95.0],
    )
    policy.attempt_started(100)
    assert not policy.attempt_failed(101).restart  # 4 failures within 100 s: over budget
    aged = ExponentialDelayRestartPolicy(
        max_restarts=3,
        window=100,
        backoff=Backoff(initial=1, max=1, jitter=0),
        reset_after=50,
        prior_failures=[10.0, 20.0, 95.0],
    )
    aged.attempt_started(150)
    assert aged.attempt_failed(151).restart  # 10 and 20 left the window
