"""Transition tables: for every handler state, each event -> controller calls, result, next state.

Each case drives a real handler into the state under test with ``given``
events, then applies the ``when`` event and compares the calls recorded by a
``RecordingController`` (in order), the event's return value and the type of
the next state.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from barrier_runtime_testing import alignment as testing

from barrier_runtime import alignment
from barrier_runtime.core import clock, types

START = 100.0
CANCELLED = types.FailureReason.CANCELLED
SUBSUMED = types.FailureReason.SUBSUMED
STARTED = alignment.BarrierResult.STARTED
COLLECTED = alignment.BarrierResult.COLLECTED
COMPLETED = alignment.BarrierResult.COMPLETED
OBSOLETE = alignment.BarrierResult.OBSOLETE
Waiting = alignment.WaitingForFirstBarrier
Collecting = alignment.CollectingBarriers
CollectingUnaligned = alignment.CollectingBarriersUnaligned
Tracking = alignment.TrackingBarriers

CONFIGS = {
    "aligned": types.CheckpointConfig(),
    "unaligned": types.CheckpointConfig(unaligned=True),
    "alternating": types.CheckpointConfig(unaligned=True, aligned_timeout=5.0),
    "tracking": types.CheckpointConfig(mode=types.CheckpointingMode.AT_LEAST_ONCE),
}


def B(channel: int, cid: int, *, late: float = 0.0, unaligned: bool = False, sp: bool = False):
    kind = types.CheckpointKind.SAVEPOINT if sp else types.CheckpointKind.CHECKPOINT
    barrier = types.Barrier(types.CheckpointId(cid), START - late, kind, unaligned)
    return ("barrier", channel, barrier)


def C(channel: int, cid: int):
    return ("cancel", channel, types.CheckpointId(cid))


def E(channel: int):
    return ("end", channel)


def R(channel: int):
    return ("record", channel)


def TICK(seconds: float):
    """Advance the clock, then poll ``check_timeouts``."""
    return ("tick", seconds)


def ADVANCE(seconds: float):
    """Advance the clock without polling (the next barrier must notice)."""
    return ("advance", seconds)


def apply(handler: alignment.BarrierHandler, manual: clock.ManualClock, event: tuple) -> Any:
    match event:
        case ("barrier", channel, barrier):
            return handler.barrier_received(channel, barrier)
        case ("cancel", channel, cid):
            return handler.cancel_received(channel, cid)
        case ("end", channel):
            return handler.end_of_partition(channel)
        case ("record", channel):
            return handler.record_received(channel)
        case ("tick", seconds):
            manual.advance(seconds)
            return handler.check_timeouts()
        case ("advance", seconds):
            manual.advance(seconds)
            return None
    raise AssertionError(f"unknown event {event}")


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    mode: str
    given: tuple
    when: tuple
    calls: list
    then: type
    result: object = None
    channels: int = 3


def run_case(case: Case) -> None:
    task = testing.RecordingController()
    manual = clock.ManualClock(START)
    handler = alignment.create_barrier_handler(CONFIGS[case.mode], case.channels, task, manual)
    for event in case.given:
        apply(handler, manual, event)
    task.take()
    result = apply(handler, manual, case.when)
    assert task.take() == case.calls
    assert result == case.result
    assert type(handler.state) is case.then


WAITING_FOR_FIRST_BARRIER = [
    Case(
        "aligned barrier blocks its channel",
        "aligned",
        (),
        B(0, 1),
        [("block", 0)],
        Collecting,
        STARTED,
    ),
    Case(
        "single channel snapshots at once",
        "aligned",
        (),
        B(0, 1),
        [("snapshot", 1, "aligned")],
        Waiting,
        COMPLETED,
        channels=1,
    ),
    Case(
        "closed channels count as aligned",
        "aligned",
        (E(1), E(2)),
        B(0, 1),
        [("snapshot", 1, "aligned")],
        Waiting,
        COMPLETED,
    ),
    Case(
        "unaligned barrier followed in aligned mode",
        "aligned",
        (),
        B(0, 1, unaligned=True),
        [("snapshot", 1, "unaligned")],
        CollectingUnaligned,
        STARTED,
    ),
    Case(
        "unaligned barrier on single channel",
        "aligned",
        (),
        B(0, 1, unaligned=True),
        [("snapshot", 1, "unaligned"), ("channel_state_complete", 1)],
        Waiting,
        COMPLETED,
        channels=1,
    ),
    Case(
        "unaligned mode snapshots at first barrier",
        "unaligned",
        (),
        B(0, 1),
        [("snapshot", 1, "unaligned")],
        CollectingUnaligned,
        STARTED,
    ),
    Case(
        "unaligned mode aligns savepoints",
        "unaligned",
        (),
        B(0, 1, sp=True),
        [("block", 0)],
        Collecting,
        STARTED,
    ),
    Case(
        "unaligned flag on a savepoint is dropped",
        "unaligned",
        (),
        B(0, 1, sp=True, unaligned=True),
        [("block", 0)],
        Collecting,
        STARTED,
    ),
    Case(
        "alternating starts aligned",
        "alternating",
        (),
        B(0, 1),
        [("block", 0)],
        Collecting,
        STARTED,
    ),
    Case(
        "alternating late first barrier starts unaligned",
        "alternating",
        (),
        B(0, 1, late=6),
        [("snapshot", 1, "unaligned")],
        CollectingUnaligned,
        STARTED,
    ),
    Case(
        "alternating exactly at the timeout stays aligned",
        "alternating",
        (),
        B(0, 1, late=5),
        [("block", 0)],
        Collecting,
        STARTED,
    ),
    Case(
        "alternating late savepoint stays aligned",
        "alternating",
        (),
        B(0, 1, late=60, sp=True),
        [("block", 0)],
        Collecting,
        STARTED,
    ),
    Case(
        "alternating late barrier with nothing to wait for",
        "alternating",
        (),
        B(0, 1, late=6),
        [("snapshot", 1, "aligned")],
        Waiting,
        COMPLETED,
        channels=1,
    ),
    Case("end of partition while idle", "aligned", (), E(0), [], Waiting),
    Case("timeout poll while idle", "alternating", (), TICK(60), [], Waiting),
    Case(
        "cancel of an unseen id aborts it",
        "aligned",
        (),
        C(0, 1),
        [("abort", 1, CANCELLED)],
        Waiting,
    ),
    Case("record while idle is plain input", "unaligned", (), R(0), [], Waiting),
]

COLLECTING_BARRIERS = [
    Case(
        "next barrier blocks its channel",
        "aligned",
        (B(0, 1),),
        B(1, 1),
        [("block", 1)],
        Collecting,
        COLLECTED,
    ),
    Case(
        "last barrier snapshots then unblocks",
        "aligned",
        (B(0, 1), B(1, 1)),
        B(2, 1),
        [("snapshot", 1, "aligned"), ("unblock_all",)],
        Waiting,
        COMPLETED,
    ),
    Case("end of partition of a missing channel", "aligned", (B(0, 1),), E(1), [], Collecting),
    Case(
        "end of the last missing channel completes",
        "aligned",
        (B(0, 1), E(1)),
        E(2),
        [("snapshot", 1, "aligned"), ("unblock_all",)],
        Waiting,
    ),
    Case(
        "unaligned barrier switches",
        "aligned",
        (B(0, 1),),
        B(1, 1, unaligned=True),
        [("snapshot", 1, "unaligned"), ("unblock_all",)],
        CollectingUnaligned,
        COLLECTED,
    ),
    Case(
        "unaligned last barrier switches and completes",
        "aligned",
        (B(0, 1), B(1, 1)),
        B(2, 1, unaligned=True),
        [("snapshot", 1, "unaligned"), ("unblock_all",), ("channel_state_complete", 1)],
        Waiting,
        COMPLETED,
    ),
    Case(
        "timeout poll past the timeout switches",
        "alternating",
        (B(0, 1),),
        TICK(6),
        [("snapshot", 1, "unaligned"), ("unblock_all",)],
        CollectingUnaligned,
    ),
    Case("timeout poll before the timeout", "alternating", (B(0, 1),), TICK(4), [], Collecting),
    Case(
        "late barrier switches",
        "alternating",
        (B(0, 1), ADVANCE(6)),
        B(1, 1),
        [("snapshot", 1, "unaligned"), ("unblock_all",)],
        CollectingUnaligned,
        COLLECTED,
    ),
    Case(
        "late last barrier completes aligned",
        "alternating",
        (B(0, 1), ADVANCE(6)),
        B(1, 1),
        [("snapshot", 1, "aligned"), ("unblock_all",)],
        Waiting,
        COMPLETED,
        channels=2,
    ),
    Case(
        "savepoint never times out", "alternating", (B(0, 1, sp=True),), TICK(600), [], Collecting
    ),
    Case("aligned mode never times out", "aligned", (B(0, 1),), TICK(600), [], Collecting),
    Case(
        "record on an unblocked channel is plain input", "aligned", (B(0, 1),), R(1), [], Collecting
    ),
    Case(
        "cancel unblocks and aborts",
        "aligned",
        (B(0, 1),),
        C(1, 1),
        [("unblock_all",), ("abort", 1, CANCELLED)],
        Waiting,
    ),
    Case(
        "newer barrier subsumes",
        "aligned",
        (B(0, 1),),
        B(1, 2),
        [("unblock_all",), ("abort", 1, SUBSUMED), ("block", 1)],
        Collecting,
        STARTED,
    ),
    Case("older barrier is obsolete", "aligned", (B(0, 2),), B(1, 1), [], Collecting, OBSOLETE),
]

COLLECTING_BARRIERS_UNALIGNED = [
    Case(
        "record before the channel's barrier is channel state",
        "unaligned",
        (B(0, 1),),
        R(1),
        [],
        CollectingUnaligned,
        1,
    ),
    Case(
        "record after the channel's barrier is plain input",
        "unaligned",
        (B(0, 1),),
        R(0),
        [],
        CollectingUnaligned,
    ),
    Case(
        "record after a later barrier is plain input",
        "unaligned",
        (B(0, 1), B(1, 1)),
        R(1),
        [],
        CollectingUnaligned,
    ),
    Case(
        "next barrier is collected",
        "unaligned",
        (B(0, 1),),
        B(1, 1),
        [],
        CollectingUnaligned,
        COLLECTED,
    ),
    Case(
        "last barrier completes channel state",
        "unaligned",
        (B(0, 1), B(1, 1)),
        B(2, 1),
        [("channel_state_complete", 1)],
        Waiting,
        COMPLETED,
    ),
    Case(
        "end of partition of a missing channel",
        "unaligned",
        (B(0, 1),),
        E(1),
        [],
        CollectingUnaligned,
    ),
    Case(
        "end of the last missing channel completes",
        "unaligned",
        (B(0, 1), E(1)),
        E(2),
        [("channel_state_complete", 1)],
        Waiting,
    ),
    Case(
        "timeout poll changes nothing",
        "alternating",
        (B(0, 1), TICK(6)),
        TICK(60),
        [],
        CollectingUnaligned,
    ),
    Case("cancel aborts", "unaligned", (B(0, 1),), C(2, 1), [("abort", 1, CANCELLED)], Waiting),
    Case(
        "newer barrier subsumes and snapshots",
        "unaligned",
        (B(0, 1),),
        B(1, 2),
        [("abort", 1, SUBSUMED), ("snapshot", 2, "unaligned")],
        CollectingUnaligned,
        STARTED,
    ),
    Case(
        "older barrier is obsolete",
        "unaligned",
        (B(0, 2),),
        B(1, 1),
        [],
        CollectingUnaligned,
        OBSOLETE,
    ),
    Case("no capture after cancel", "unaligned", (B(0, 1), C(2, 1)), R(2), [], Waiting),
]

TRACKING_BARRIERS = [
    Case("first barrier blocks nothing", "tracking", (), B(0, 1), [], Tracking, STARTED),
    Case("next barrier is counted", "tracking", (B(0, 1),), B(1, 1), [], Tracking, COLLECTED),
    Case(
        "last barrier snapshots",
        "tracking",
        (B(0, 1), B(1, 1)),
        B(2, 1),
        [("snapshot", 1, "aligned")],
        Tracking,
        COMPLETED,
    ),
    Case("newer barrier runs concurrently", "tracking", (B(0, 1),), B(0, 2), [], Tracking, STARTED),
    Case(
        "completing a newer id subsumes older",
        "tracking",
        (B(0, 1), B(0, 2), B(1, 2)),
        B(2, 2),
        [("snapshot", 2, "aligned"), ("abort", 1, SUBSUMED)],
        Tracking,
        COMPLETED,
    ),
    Case(
        "end of partition completes",
        "tracking",
        (B(0, 1), B(1, 1)),
        E(2),
        [("snapshot", 1, "aligned")],
        Tracking,
    ),
    Case(
        "end of partition completes several in order",
        "tracking",
        (B(0, 1), B(0, 2), B(1, 1), B(1, 2)),
        E(2),
        [("snapshot", 1, "aligned"), ("snapshot", 2, "aligned")],
        Tracking,
    ),
    Case(
        "cancel aborts only older and equal",
        "tracking",
        (B(0, 1), B(0, 2), B(0, 3)),
        C(1, 2),
        [("abort", 1, CANCELLED), ("abort", 2, CANCELLED)],
        Tracking,
    ),
    Case(
        "unaligned flag is ignored",
        "tracking",
        (),
        B(0, 1, unaligned=True),
        [("snapshot", 1, "aligned")],
        Tracking,
        COMPLETED,
        channels=1,
    ),
    Case("records are plain input", "tracking", (B(0, 1),), R(1), [], Tracking),
    Case("timeout poll changes nothing", "tracking", (B(0, 1),), TICK(600), [], Tracking),
    Case("obsolete below the newest seen", "tracking", (B(0, 2),), B(1, 1), [], Tracking, OBSOLETE),
]


@pytest.mark.parametrize("case", WAITING_FOR_FIRST_BARRIER, ids=lambda c: c.name)
def test_waiting_for_first_barrier(case: Case) -> None:
    run_case(case)


@pytest.mark.parametrize("case", COLLECTING_BARRIERS, ids=lambda c: c.name)
def test_collecting_barriers(case: Case) -> None:
    run_case(case)


@pytest.mark.parametrize("case", COLLECTING_BARRIERS_UNALIGNED, ids=lambda c: c.name)
def test_collecting_barriers_unaligned(case: Case) -> None:
    run_case(case)


@pytest.mark.parametrize("case", TRACKING_BARRIERS, ids=lambda c: c.name)
def test_tracking_barriers(case: Case) -> None:
    run_case(case)


@pytest.mark.parametrize(
    ("mode", "given", "blocked"),
    [
        ("aligned", (B(0, 1), B(2, 1)), {0, 2}),
        ("aligned", (B(0, 1), B(1, 1), B(2, 1)), set()),
        ("aligned", (B(0, 1), B(1, 1, unaligned=True)), set()),
        ("alternating", (B(0, 1), B(1, 1), TICK(6)), set()),
        ("unaligned", (B(0, 1), B(1, 1)), set()),
        ("tracking", (B(0, 1), B(1, 1)), set()),
    ],
)
def test_blocked_channels_are_exactly_the_aligned_ones(mode, given, blocked) -> None:
    manual = clock.ManualClock(START)
    handler = alignment.create_barrier_handler(
        CONFIGS[mode], 3, testing.RecordingController(), manual
    )
    for event in given:
        apply(handler, manual, event)
    assert {channel for channel in range(3) if handler.is_blocked(channel)} == blocked
