"""A small language for barrier handler transition tables: events, cases, and a runner.

``B(channel, id)`` a barrier, ``C`` a cancel, ``E`` end of partition, ``R`` a released
channel, ``TICK``/``ADVANCE`` time; a :class:`Case` drives a real handler into a state
with ``given`` events, applies ``when`` and checks the recorded controller calls, the
result and the next state.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from barrier_runtime import alignment
from barrier_runtime.core import clock, types
from barrier_runtime_testing import alignment as testing

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


Event = tuple[Any, ...]
"""One event of a table row: ``("barrier", channel, barrier)``, ``("tick", seconds)``, …"""


def B(
    channel: int, cid: int, *, late: float = 0.0, unaligned: bool = False, sp: bool = False
) -> Event:
    kind = types.CheckpointKind.SAVEPOINT if sp else types.CheckpointKind.CHECKPOINT
    barrier = types.Barrier(types.CheckpointId(cid), START - late, kind, unaligned)
    return ("barrier", channel, barrier)


def C(channel: int, cid: int) -> Event:
    return ("cancel", channel, types.CheckpointId(cid))


def E(channel: int) -> Event:
    return ("end", channel)


def R(channel: int) -> Event:
    return ("record", channel)


def TICK(seconds: float) -> Event:
    """Advance the clock, then poll ``check_timeouts``."""
    return ("tick", seconds)


def ADVANCE(seconds: float) -> Event:
    """Advance the clock without polling (the next barrier must notice)."""
    return ("advance", seconds)


def apply(handler: alignment.BarrierHandler, manual: clock.ManualClock, event: Event) -> Any:
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
    given: tuple[Event, ...]
    when: Event
    calls: list[tuple[Any, ...]]
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
