"""Mode selection from the checkpoint config and the alignment policy table."""

from __future__ import annotations

import pytest
from barrier_runtime_testing import alignment as testing

from barrier_runtime import alignment
from barrier_runtime.alignment import policy
from barrier_runtime.core import clock, types

Mode = alignment.AlignmentMode
EXACTLY = types.CheckpointingMode.EXACTLY_ONCE
AT_LEAST = types.CheckpointingMode.AT_LEAST_ONCE


@pytest.mark.parametrize(
    ("config", "mode", "state"),
    [
        (types.CheckpointConfig(mode=AT_LEAST), Mode.TRACKING, alignment.TrackingBarriers),
        (types.CheckpointConfig(mode=EXACTLY), Mode.ALIGNED, alignment.WaitingForFirstBarrier),
        (
            types.CheckpointConfig(mode=EXACTLY, aligned_timeout=3.0),
            Mode.ALIGNED,
            alignment.WaitingForFirstBarrier,
        ),
        (types.CheckpointConfig(unaligned=True), Mode.UNALIGNED, alignment.WaitingForFirstBarrier),
        (
            types.CheckpointConfig(unaligned=True, aligned_timeout=3.0),
            Mode.ALTERNATING,
            alignment.WaitingForFirstBarrier,
        ),
    ],
)
def test_factory_picks_the_handler_for_the_config(config, mode, state) -> None:
    gate = alignment.create_barrier_handler(
        config, 2, testing.RecordingController(), clock.ManualClock()
    )
    assert gate.policy.mode is mode
    assert type(gate.state) is state
    assert gate.open_channels == 2


def checkpoint(timestamp: float = 10.0, *, unaligned: bool = False) -> types.Barrier:
    return types.Barrier(types.CheckpointId(1), timestamp, unaligned=unaligned)


def savepoint(timestamp: float = 10.0, *, unaligned: bool = False) -> types.Barrier:
    return types.Barrier(
        types.CheckpointId(1), timestamp, types.CheckpointKind.SAVEPOINT, unaligned
    )


TRACKING = policy.AlignmentPolicy(Mode.TRACKING)
ALIGNED = policy.AlignmentPolicy(Mode.ALIGNED)
UNALIGNED = policy.AlignmentPolicy(Mode.UNALIGNED)
ALTERNATING = policy.AlignmentPolicy(Mode.ALTERNATING, aligned_timeout=2.0)


@pytest.mark.parametrize(
    ("rules", "barrier", "expected"),
    [
        (TRACKING, checkpoint(unaligned=True), False),
        (ALIGNED, checkpoint(), False),
        (ALIGNED, checkpoint(unaligned=True), True),
        (ALIGNED, savepoint(unaligned=True), False),
        (UNALIGNED, checkpoint(), True),
        (UNALIGNED, savepoint(), False),
        (ALTERNATING, checkpoint(), False),
        (ALTERNATING, checkpoint(unaligned=True), True),
    ],
)
def test_starts_unaligned(rules, barrier, expected) -> None:
    assert rules.starts_unaligned(barrier) is expected


@pytest.mark.parametrize(
    ("rules", "barrier", "now", "expected"),
    [
        (ALTERNATING, checkpoint(10.0), 11.9, False),
        (ALTERNATING, checkpoint(10.0), 12.0, False),  # strictly longer than the timeout
        (ALTERNATING, checkpoint(10.0), 12.1, True),
        (ALTERNATING, savepoint(10.0), 1000.0, False),
        (ALIGNED, checkpoint(10.0), 1000.0, False),
        (UNALIGNED, checkpoint(10.0), 1000.0, False),
        (TRACKING, checkpoint(10.0), 1000.0, False),
    ],
)
def test_is_timed_out(rules, barrier, now, expected) -> None:
    assert rules.is_timed_out(barrier, now) is expected


@pytest.mark.parametrize(
    ("rules", "barrier", "expected"),
    [
        (ALIGNED, savepoint(unaligned=True), savepoint()),
        (TRACKING, checkpoint(unaligned=True), checkpoint()),
        (ALIGNED, checkpoint(unaligned=True), checkpoint(unaligned=True)),
        (UNALIGNED, checkpoint(), checkpoint()),
    ],
)
def test_normalise_strips_the_unaligned_flag_where_it_cannot_apply(rules, barrier, expected):
    assert rules.normalise(barrier) == expected


@pytest.mark.parametrize(
    ("rules", "expected"),
    [(TRACKING, policy.MAX_TRACKED_CHECKPOINTS), (ALIGNED, 1), (UNALIGNED, 1), (ALTERNATING, 1)],
)
def test_max_pending(rules, expected) -> None:
    assert rules.max_pending == expected


@pytest.mark.parametrize(
    ("mode", "timeout", "message"),
    [(Mode.ALTERNATING, 0.0, "positive aligned_timeout"), (Mode.ALIGNED, -1.0, "negative")],
)
def test_policy_rejects_impossible_timeouts(mode, timeout, message) -> None:
    with pytest.raises(ValueError, match=message):
        policy.AlignmentPolicy(mode, timeout)
