"""Transition tables of the unaligned and tracking states, and which channels are blocked: for every handler state, each event -> controller calls, result, next state.

Each case drives a real handler into the state under test with ``given``
events, then applies the ``when`` event and compares the calls recorded by a
``RecordingController`` (in order), the event's return value and the type of
the next state.
"""

from __future__ import annotations

import pytest
from barrier_runtime_testing import alignment as testing
from barrier_runtime_testing.alignment_tables import (
    CANCELLED,
    COLLECTED,
    COMPLETED,
    CONFIGS,
    OBSOLETE,
    START,
    STARTED,
    SUBSUMED,
    TICK,
    B,
    C,
    Case,
    CollectingUnaligned,
    E,
    R,
    Tracking,
    Waiting,
    apply,
    run_case,
)

from barrier_runtime import alignment
from barrier_runtime.core import clock

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
