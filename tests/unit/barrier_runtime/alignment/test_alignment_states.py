"""Transition tables: for every handler state, each event -> controller calls, result, next state.

Each case drives a real handler into the state under test with ``given``
events, then applies the ``when`` event and compares the calls recorded by a
``RecordingController`` (in order), the event's return value and the type of
the next state.
"""

from __future__ import annotations

import pytest
from barrier_runtime_testing.alignment_tables import (
    ADVANCE,
    CANCELLED,
    COLLECTED,
    COMPLETED,
    OBSOLETE,
    STARTED,
    SUBSUMED,
    TICK,
    B,
    C,
    Case,
    Collecting,
    CollectingUnaligned,
    E,
    R,
    Waiting,
    run_case,
)

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


@pytest.mark.parametrize("case", WAITING_FOR_FIRST_BARRIER, ids=lambda c: c.name)
def test_waiting_for_first_barrier(case: Case) -> None:
    run_case(case)


@pytest.mark.parametrize("case", COLLECTING_BARRIERS, ids=lambda c: c.name)
def test_collecting_barriers(case: Case) -> None:
    run_case(case)
