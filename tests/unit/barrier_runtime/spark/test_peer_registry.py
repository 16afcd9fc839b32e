"""The driver's side of the rendezvous: every worker's address, once, for this attempt only."""

from __future__ import annotations

import pytest

from barrier_runtime.core.clock import ManualClock
from barrier_runtime.spark.peer_registry import PeerRegistry, Registration, RendezvousTimeoutError


def _registry(clock: ManualClock | None = None, parallelism: int = 3) -> PeerRegistry:
    return PeerRegistry(
        attempt=4, parallelism=parallelism, timeout=30.0, clock=clock or ManualClock()
    )


def test_the_last_registration_completes_the_list_in_worker_order() -> None:
    peers = _registry()
    assert peers.register(4, 2, "h2:3") is Registration.ACCEPTED
    assert peers.addresses is None
    assert peers.register(4, 0, "h0:1") is Registration.ACCEPTED
    assert peers.register(4, 1, "h1:2") is Registration.COMPLETED
    assert peers.addresses == ("h0:1", "h1:2", "h2:3")


def test_a_worker_of_another_attempt_is_never_mixed_in() -> None:
    peers = _registry(parallelism=2)
    assert peers.register(3, 0, "stale:1") is Registration.STALE
    assert peers.register(5, 1, "future:1") is Registration.STALE
    assert peers.missing == [0, 1]
    peers.register(4, 0, "h0:1")
    assert peers.register(4, 1, "h1:2") is Registration.COMPLETED
    assert peers.addresses == ("h0:1", "h1:2")


def test_duplicates_and_unknown_indexes_are_refused_and_change_nothing() -> None:
    peers = _registry(parallelism=2)
    peers.register(4, 0, "h0:1")
    assert peers.register(4, 0, "other:9") is Registration.DUPLICATE
    assert peers.register(4, 2, "h2:1") is Registration.OUT_OF_RANGE
    assert peers.register(4, -1, "h:1") is Registration.OUT_OF_RANGE
    assert peers.register(4, 1, "h1:2") is Registration.COMPLETED
    assert peers.register(4, 1, "h1:2") is Registration.DUPLICATE  # completes only once
    assert peers.addresses == ("h0:1", "h1:2")


def test_a_rendezvous_not_complete_in_time_is_one_clear_error() -> None:
    clock = ManualClock(100.0)
    peers = _registry(clock)
    clock.advance(500)  # the cluster took long to start the tasks: not counted
    assert peers.overdue() is None
    peers.register(4, 1, "h1:2")
    clock.advance(29.9)
    assert peers.overdue() is None
    clock.advance(0.1)
    error = peers.overdue()
    assert isinstance(error, RendezvousTimeoutError)
    assert "worker(s) [0, 2] of attempt 4 did not register" in str(error)
    assert "1 of 3 registered" in str(error)
    with pytest.raises(RendezvousTimeoutError):
        raise error


def test_a_complete_rendezvous_never_times_out() -> None:
    clock = ManualClock()
    peers = _registry(clock, parallelism=1)
    peers.register(4, 0, "h0:1")
    clock.advance(1000)
    assert peers.overdue() is None
