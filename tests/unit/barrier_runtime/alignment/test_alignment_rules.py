"""Cross-cutting rules of the handler: obsolete, subsumed, cancelled, corrupt, end of input."""

from __future__ import annotations

import pytest
from barrier_runtime_testing import alignment as testing

from barrier_runtime import alignment
from barrier_runtime.core import clock, types

START = 100.0
CANCELLED = types.FailureReason.CANCELLED
SUBSUMED = types.FailureReason.SUBSUMED
OBSOLETE = alignment.BarrierResult.OBSOLETE
STARTED = alignment.BarrierResult.STARTED
COMPLETED = alignment.BarrierResult.COMPLETED
EXACTLY_ONCE_MODES = ["aligned", "unaligned", "alternating"]
ALL_MODES = [*EXACTLY_ONCE_MODES, "tracking"]
CONFIGS = {
    "aligned": types.CheckpointConfig(),
    "unaligned": types.CheckpointConfig(unaligned=True),
    "alternating": types.CheckpointConfig(unaligned=True, aligned_timeout=5.0),
    "tracking": types.CheckpointConfig(mode=types.CheckpointingMode.AT_LEAST_ONCE),
}


def barrier(cid: int, timestamp: float = START, *, sp: bool = False) -> types.Barrier:
    kind = types.CheckpointKind.SAVEPOINT if sp else types.CheckpointKind.CHECKPOINT
    return types.Barrier(types.CheckpointId(cid), timestamp, kind)


def make(mode: str, channels: int = 2):
    task = testing.RecordingController()
    manual = clock.ManualClock(START)
    return alignment.create_barrier_handler(CONFIGS[mode], channels, task, manual), task, manual


def complete(handler: alignment.BarrierHandler, cid: int, channels: int = 2) -> None:
    for channel in range(channels):
        handler.barrier_received(channel, barrier(cid))


def aborts(task: testing.RecordingController) -> list[tuple]:
    return [call for call in task.calls if call[0] == "abort"]


# -- obsolete ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ALL_MODES)
@pytest.mark.parametrize("abort", ["cancel", "subsume"])
def test_barrier_of_an_aborted_id_is_obsolete(mode: str, abort: str) -> None:
    handler, task, _ = make(mode, channels=3)
    handler.barrier_received(0, barrier(1))
    if abort == "cancel":
        handler.cancel_received(1, types.CheckpointId(1))
    else:
        handler.barrier_received(1, barrier(2))
        if mode == "tracking":  # concurrent: 1 is still pending, abort it explicitly
            handler.cancel_received(0, types.CheckpointId(1))
    task.take()
    assert handler.barrier_received(2, barrier(1)) is OBSOLETE
    assert task.take() == []
    assert handler.pending_checkpoint == (None if abort == "cancel" else 2)
    assert not handler.is_blocked(2)


@pytest.mark.parametrize("mode", ALL_MODES)
def test_barrier_of_a_cancelled_unseen_id_is_ignored_then_the_next_starts(mode: str) -> None:
    handler, task, _ = make(mode)
    handler.cancel_received(0, types.CheckpointId(3))
    assert handler.barrier_received(1, barrier(3)) is OBSOLETE
    assert handler.barrier_received(1, barrier(4)) is STARTED
    assert aborts(task) == [("abort", 3, CANCELLED)]


@pytest.mark.parametrize("mode", EXACTLY_ONCE_MODES)
def test_barrier_below_the_pending_one_is_obsolete_even_if_never_seen(mode: str) -> None:
    handler, task, _ = make(mode, channels=3)
    handler.barrier_received(0, barrier(5))
    task.take()
    assert handler.barrier_received(1, barrier(4)) is OBSOLETE
    assert task.take() == []


# -- subsumed ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", EXACTLY_ONCE_MODES)
def test_newer_barrier_subsumes_the_pending_one_before_starting(mode: str) -> None:
    handler, task, _ = make(mode, channels=3)
    handler.barrier_received(0, barrier(1))
    assert handler.barrier_received(1, barrier(2)) is STARTED
    assert aborts(task) == [("abort", 1, SUBSUMED)]
    assert handler.pending_checkpoint == 2
    calls = task.calls
    assert calls.index(("abort", 1, SUBSUMED)) < len(calls) - 1  # the new start comes after
    assert handler.barrier_received(2, barrier(1)) is OBSOLETE


def test_tracking_bounds_the_number_of_concurrent_checkpoints() -> None:
    handler, task, _ = make("tracking")
    for cid in range(1, 51):
        handler.barrier_received(0, barrier(cid))
    assert aborts(task) == []
    handler.barrier_received(0, barrier(51))
    assert aborts(task) == [("abort", 1, SUBSUMED)]
    assert handler.pending_checkpoint == 2


# -- cancellation --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ALL_MODES)
@pytest.mark.parametrize(
    ("cancel", "expected"),
    [
        (1, [("abort", 1, CANCELLED)]),
        (2, [("abort", 1, CANCELLED), ("abort", 2, CANCELLED)]),
    ],
)
def test_cancel_aborts_the_pending_checkpoint_and_a_newer_unseen_id(mode, cancel, expected):
    handler, task, _ = make(mode)
    handler.barrier_received(0, barrier(1))
    handler.cancel_received(1, types.CheckpointId(cancel))
    assert aborts(task) == expected
    assert handler.pending_checkpoint is None
    assert handler.latest_checkpoint_id == cancel
    assert not handler.is_blocked(0)
    assert handler.barrier_received(1, barrier(cancel)) is OBSOLETE


@pytest.mark.parametrize("mode", ALL_MODES)
def test_abort_fires_once_per_id_whatever_repeats(mode: str) -> None:
    handler, task, _ = make(mode, channels=3)
    handler.barrier_received(0, barrier(1))
    handler.cancel_received(1, types.CheckpointId(1))
    handler.cancel_received(2, types.CheckpointId(1))
    handler.cancel_received(2, types.CheckpointId(4))
    handler.cancel_received(1, types.CheckpointId(4))
    handler.cancel_received(1, types.CheckpointId(3))
    assert aborts(task) == [("abort", 1, CANCELLED), ("abort", 4, CANCELLED)]


@pytest.mark.parametrize("mode", ALL_MODES)
def test_cancel_of_a_completed_or_older_id_changes_nothing(mode: str) -> None:
    handler, task, _ = make(mode)
    complete(handler, 1)
    handler.barrier_received(0, barrier(3))
    task.take()
    handler.cancel_received(1, types.CheckpointId(1))
    handler.cancel_received(1, types.CheckpointId(2))
    assert task.take() == []
    assert handler.pending_checkpoint == 3


def test_subsumed_then_cancelled_id_aborts_once() -> None:
    handler, task, _ = make("aligned", channels=3)
    handler.barrier_received(0, barrier(1))
    handler.barrier_received(1, barrier(2))
    handler.cancel_received(2, types.CheckpointId(1))
    assert aborts(task) == [("abort", 1, SUBSUMED)]
    assert handler.pending_checkpoint == 2


# -- corrupt streams and task bugs ---------------------------------------------------------


@pytest.mark.parametrize("mode", ALL_MODES)
@pytest.mark.parametrize(
    "given",
    [
        [(0, 1)],  # repeated while pending (aligned: on a blocked channel)
        [(0, 1), (1, 1)],  # repeated after completion
        [(0, 3)],  # reordered: 2 after 3
    ],
)
def test_repeated_or_reordered_barrier_is_a_corrupt_stream(mode, given) -> None:
    handler, task, _ = make(mode)
    for channel, cid in given:
        handler.barrier_received(channel, barrier(cid))
    again = 2 if given == [(0, 3)] else 1
    task.take()
    with pytest.raises(alignment.CorruptStreamError, match="strictly increase"):
        handler.barrier_received(0, barrier(again))
    assert task.take() == []
    assert handler.pending_checkpoint == (None if len(given) == 2 else given[0][1])


@pytest.mark.parametrize("mode", ALL_MODES)
@pytest.mark.parametrize(
    "event",
    [
        lambda h: h.barrier_received(0, barrier(1)),
        lambda h: h.cancel_received(0, types.CheckpointId(1)),
        lambda h: h.record_received(0),
        lambda h: h.end_of_partition(0),
    ],
    ids=["barrier", "cancel", "record", "end"],
)
def test_anything_after_end_of_partition_is_a_corrupt_stream(mode, event) -> None:
    handler, _, _ = make(mode)
    handler.end_of_partition(0)
    with pytest.raises(alignment.CorruptStreamError, match="after its end of partition"):
        event(handler)


@pytest.mark.parametrize(
    "event",
    [
        lambda h: h.barrier_received(0, barrier(2)),
        lambda h: h.cancel_received(0, types.CheckpointId(1)),
        lambda h: h.record_received(0),
        lambda h: h.end_of_partition(0),
    ],
    ids=["barrier", "cancel", "record", "end"],
)
def test_reading_a_blocked_channel_is_a_task_bug(event) -> None:
    handler, task, _ = make("aligned")
    handler.barrier_received(0, barrier(1))
    task.take()
    with pytest.raises(alignment.ChannelBlockedError, match="channel 0, which is blocked"):
        event(handler)
    assert task.take() == []
    assert handler.is_blocked(0)
    assert handler.open_channels == 2


@pytest.mark.parametrize("channel", [-1, 2])
def test_unknown_channel_is_rejected(channel: int) -> None:
    handler, _, _ = make("aligned")
    with pytest.raises(ValueError, match="does not exist"):
        handler.record_received(channel)


@pytest.mark.parametrize("channels", [0, -1])
def test_a_gate_needs_a_channel(channels: int) -> None:
    with pytest.raises(ValueError, match="at least one input channel"):
        make("aligned", channels=channels)


# -- end of partition ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "how"), [("aligned", "aligned"), ("tracking", "aligned"), ("unaligned", "unaligned")]
)
def test_closing_every_missing_channel_completes(mode: str, how: str) -> None:
    handler, task, _ = make(mode, channels=4)
    handler.barrier_received(1, barrier(1))
    for channel in (0, 2):
        handler.end_of_partition(channel)
    assert handler.pending_checkpoint == 1
    assert handler.open_channels == 2
    handler.end_of_partition(3)
    assert handler.pending_checkpoint is None
    assert ("snapshot", 1, how) in task.calls
    assert handler.open_channels == 1


@pytest.mark.parametrize("mode", ["unaligned", "tracking"])  # aligned: they are blocked
def test_closing_a_channel_that_delivered_does_not_complete(mode: str) -> None:
    handler, task, _ = make(mode, channels=3)
    handler.barrier_received(0, barrier(1))
    handler.barrier_received(1, barrier(1))
    task.take()
    handler.end_of_partition(0)
    assert task.take() == []
    assert handler.pending_checkpoint == 1


# -- measurements and the snapshotted barrier ------------------------------------------------


def test_alignment_duration_is_measured_from_the_first_barrier() -> None:
    handler, task, manual = make("aligned")
    manual.advance(3.0)
    handler.barrier_received(0, barrier(1, timestamp=START - 10))
    manual.advance(2.5)
    handler.barrier_received(1, barrier(1, timestamp=START - 10))
    [(snapshot, duration)] = task.snapshots
    assert duration == pytest.approx(2.5)
    assert snapshot == barrier(1, timestamp=START - 10)


def test_switched_checkpoint_reports_time_spent_aligning() -> None:
    handler, task, manual = make("alternating", channels=3)
    handler.barrier_received(0, barrier(1, sp=False))
    manual.advance(7.0)
    handler.check_timeouts()
    [(snapshot, duration)] = task.snapshots
    assert snapshot == barrier(1).as_unaligned()
    assert duration == pytest.approx(7.0)


def test_savepoint_barrier_is_forwarded_aligned_with_its_kind() -> None:
    handler, task, _ = make("unaligned")
    savepoint = barrier(1, sp=True)
    handler.barrier_received(0, savepoint.as_unaligned())
    handler.barrier_received(1, savepoint)
    [(snapshot, _)] = task.snapshots
    assert snapshot == savepoint
    assert snapshot.is_savepoint and not snapshot.unaligned


def test_queries_follow_the_protocol() -> None:
    handler, _, _ = make("aligned", channels=3)
    assert (handler.pending_checkpoint, handler.latest_checkpoint_id) == (None, None)
    assert handler.open_channels == 3
    handler.barrier_received(1, barrier(7))
    assert (handler.pending_checkpoint, handler.latest_checkpoint_id) == (7, 7)
    assert [handler.is_blocked(channel) for channel in range(3)] == [False, True, False]
    handler.end_of_partition(0)
    assert handler.open_channels == 2
    handler.barrier_received(2, barrier(7))
    assert (handler.pending_checkpoint, handler.latest_checkpoint_id) == (None, 7)
