"""The input gate's capture of in-flight data for unaligned checkpoints, and its input selection.

The gate is real, with real in-memory channels; only the checkpointing part
behind its ``GateCheckpointing`` port is a recorder. ``OvertakingEnd`` stands
for a network input channel, where a priority barrier overtakes the data
received but not yet taken (``drain_overtaken``).
"""

from __future__ import annotations

import pyarrow as pa
from barrier_runtime_testing import gate_model

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.channels import messages
from barrier_runtime.core import clock, types
from barrier_runtime.task import channel as channel_mod
from barrier_runtime.task import input_gate

UNALIGNED = types.CheckpointConfig(unaligned=True)
ALIGNED = types.CheckpointConfig()


def rows(*values: int) -> batch_mod.Batch:
    return batch_mod.Batch.from_rows([{"v": v} for v in values])


def barrier(cid: int, *, unaligned: bool = False) -> types.Barrier:
    b = types.Barrier(types.CheckpointId(cid), 0.0)
    return b.as_unaligned() if unaligned else b


class RecordingCheckpointing:
    """The gate's checkpointing port; records every call in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[object, ...]] = []

    def snapshot(
        self, barrier: types.Barrier, alignment_duration: float, *, channel_state: bool
    ) -> None:
        self.calls.append(("snapshot", barrier.checkpoint_id, barrier.unaligned, channel_state))

    def channel_state_complete(
        self, checkpoint_id: types.CheckpointId, captured: input_gate.CapturedInput
    ) -> None:
        values = [
            (side, row["v"])
            for side, _, batch in captured
            if isinstance(batch, batch_mod.Batch)
            for row in batch.rows()
        ]
        self.calls.append(("channel_state", checkpoint_id, values))

    def abort(self, checkpoint_id: types.CheckpointId, reason: types.FailureReason) -> None:
        self.calls.append(("abort", checkpoint_id, reason))


class OvertakingEnd(gate_model.ReceivingEnd):
    """A receiving end where a priority barrier overtakes every queued data batch."""

    def arrive_priority(self, b: types.Barrier) -> None:
        data = [i for i in self.items if isinstance(i, batch_mod.Batch)]
        if data:
            self.overtaken[b.checkpoint_id] = data
        self.items.appendleft(b)


def local_channels(n: int) -> list[channel_mod.LocalChannel]:
    return [
        channel_mod.LocalChannel(100, channel_mod.Signal(), channel_mod.Signal()) for _ in range(n)
    ]


def make_gate(
    inputs: list[channel_mod.InputChannel],
    config: types.CheckpointConfig = UNALIGNED,
    sides: list[int] | None = None,
) -> tuple[input_gate.InputGate, RecordingCheckpointing]:
    recorder = RecordingCheckpointing()
    gate = input_gate.InputGate(
        inputs,
        sides if sides is not None else list(range(len(inputs))),
        config,
        clock.ManualClock(0.0),
        recorder,
    )
    return gate, recorder


def take_all(gate: input_gate.InputGate, channel: int) -> list[int]:
    """Take everything readable from ``channel``; the values of the data handed out."""
    values: list[int] = []
    while (polled := gate.take_from(channel)) is not input_gate.Polled.NOTHING:
        if isinstance(polled, input_gate.DataBatch):
            values.extend(row["v"] for row in polled.batch.rows())
    return values


def test_records_of_channels_that_still_owe_the_barrier_are_captured_in_order() -> None:
    chans = local_channels(3)
    gate, recorder = make_gate(list(chans), sides=[0, 1, 1])
    chans[0].put(barrier(1, unaligned=True))
    chans[0].put(rows(100))
    chans[1].put(rows(1, 2))
    chans[1].put(rows(3))
    chans[1].put(barrier(1, unaligned=True))
    chans[2].put(rows(7))
    assert take_all(gate, 0) == [100]  # after its barrier: not channel state
    assert recorder.calls == [("snapshot", 1, True, True)]
    assert gate.capturing == {1}
    assert take_all(gate, 1) == [1, 2, 3]  # handed out *and* captured
    chans[2].put(barrier(1, unaligned=True))
    assert take_all(gate, 2) == [7]
    assert recorder.calls[1:] == [("channel_state", 1, [(1, 1), (1, 2), (1, 3), (1, 7)])]
    assert not gate.capturing


def capturing_gate() -> tuple[
    list[channel_mod.LocalChannel], input_gate.InputGate, list[input_gate.CapturedInput]
]:
    """Two channels from senders 0 and 1 into one unaligned gate, and what it hands over."""
    chans = local_channels(2)
    recorder = RecordingCheckpointing()
    gate = input_gate.InputGate(
        list(chans), [0, 0], UNALIGNED, clock.ManualClock(0.0), recorder, senders=[0, 1]
    )
    captured: list[input_gate.CapturedInput] = []
    recorder.channel_state_complete = lambda cid, entries: captured.append(entries)  # type: ignore[method-assign]
    return chans, gate, captured


def test_a_captured_arrow_batch_is_kept_as_it_travelled_not_turned_into_rows() -> None:
    chans, gate, captured = capturing_gate()
    arrow = batch_mod.Batch.from_arrow(pa.record_batch({"v": [1, 2]}))
    chans[0].put(barrier(1, unaligned=True))
    chans[1].put(arrow)
    chans[1].put(barrier(1, unaligned=True))
    gate.take_from(0)
    polled = gate.take_from(1)
    assert isinstance(polled, input_gate.DataBatch) and polled.batch is arrow
    gate.take_from(1)
    assert captured == [[(0, 1, arrow)]]
    assert not arrow.holds_rows  # capturing made no rows of it


def test_data_a_triggering_priority_barrier_overtook_opens_the_capture() -> None:
    end = OvertakingEnd()
    other = local_channels(1)[0]
    gate, recorder = make_gate([end, other])
    end.put(rows(1))
    end.put(rows(2))
    end.arrive_priority(barrier(4, unaligned=True))
    other.put(rows(9))
    other.put(barrier(4, unaligned=True))
    assert gate.take_from(0) is input_gate.Polled.MARKER  # the barrier, ahead of 1 and 2
    assert recorder.calls == [("snapshot", 4, True, True)]
    assert take_all(gate, 0) == [1, 2]  # still processed, after the barrier, not captured again
    assert take_all(gate, 1) == [9]
    assert recorder.calls[1:] == [("channel_state", 4, [(0, 1), (0, 2), (1, 9)])]


def test_data_a_later_priority_barrier_overtook_is_appended_to_the_running_capture() -> None:
    first = local_channels(1)[0]
    end = OvertakingEnd()
    gate, recorder = make_gate([first, end])
    first.put(barrier(2, unaligned=True))
    end.put(rows(5))
    end.put(rows(6))
    assert gate.take_from(0) is input_gate.Polled.MARKER
    end.arrive_priority(barrier(2, unaligned=True))
    assert gate.take_from(1) is input_gate.Polled.MARKER
    assert recorder.calls[1:] == [("channel_state", 2, [(1, 5), (1, 6)])]
    assert take_all(gate, 1) == [5, 6]
    assert len(recorder.calls) == 2


def test_a_single_channel_capture_is_just_what_its_barrier_overtook() -> None:
    end = OvertakingEnd()
    gate, recorder = make_gate([end])
    end.put(rows(3))
    end.arrive_priority(barrier(1, unaligned=True))
    gate.take_from(0)
    assert recorder.calls == [("snapshot", 1, True, True), ("channel_state", 1, [(0, 3)])]
    assert take_all(gate, 0) == [3]


def test_a_cancelled_checkpoint_discards_its_capture_and_aborts_once() -> None:
    chans = local_channels(2)
    gate, recorder = make_gate(list(chans))
    chans[0].put(barrier(1, unaligned=True))
    chans[1].put(rows(1))
    chans[1].put(messages.CancelMarker(types.CheckpointId(1)))
    chans[1].put(rows(2))
    gate.take_from(0)
    assert take_all(gate, 1) == [1, 2]
    assert recorder.calls == [
        ("snapshot", 1, True, True),
        ("abort", 1, types.FailureReason.CANCELLED),
    ]
    assert not gate.capturing


def test_a_capture_the_coordinator_dropped_completes_empty() -> None:
    chans = local_channels(2)
    gate, recorder = make_gate(list(chans))
    chans[0].put(barrier(1, unaligned=True))
    gate.take_from(0)
    gate.drop_capture(types.CheckpointId(1))
    chans[1].put(rows(1))
    chans[1].put(barrier(1, unaligned=True))
    assert take_all(gate, 1) == [1]
    assert recorder.calls[1:] == [("channel_state", 1, [])]


def test_completion_drops_older_captures_only_with_and_older() -> None:
    chans = local_channels(2)
    gate, _ = make_gate(list(chans))
    chans[0].put(barrier(3, unaligned=True))
    gate.take_from(0)
    gate.drop_capture(types.CheckpointId(2))
    assert gate.capturing == {3}
    gate.drop_capture(types.CheckpointId(4), and_older=True)
    assert not gate.capturing


def test_an_aligned_barrier_blocks_its_channel_and_captures_nothing() -> None:
    chans = local_channels(2)
    gate, recorder = make_gate(list(chans), ALIGNED)
    chans[0].put(barrier(1))
    chans[0].put(rows(10))
    chans[1].put(rows(1))
    assert gate.poll() is input_gate.Polled.MARKER
    assert gate.blocked == {0}
    polled = gate.poll()  # channel 0 is blocked: its 10 waits
    assert isinstance(polled, input_gate.DataBatch) and polled.channel == 1
    assert gate.poll() is input_gate.Polled.NOTHING
    chans[1].put(barrier(1))
    assert gate.poll() is input_gate.Polled.MARKER
    assert recorder.calls == [("snapshot", 1, False, False)]
    assert not gate.blocked and not gate.capturing
    assert take_all(gate, 0) == [10]


def test_while_back_pressured_only_markers_are_taken() -> None:
    chans = local_channels(2)
    gate, _ = make_gate(list(chans))
    chans[0].put(rows(1))
    chans[1].put(barrier(1, unaligned=True))
    assert gate.poll(markers_only=True) is input_gate.Polled.MARKER
    assert gate.poll(markers_only=True) is input_gate.Polled.NOTHING
    assert len(chans[0]) == 1


def test_end_of_input_is_reported_once_the_last_channel_closes() -> None:
    chans = local_channels(2)
    gate, _ = make_gate(list(chans))
    chans[0].put(messages.END_OF_PARTITION)
    chans[1].put(messages.END_OF_PARTITION)
    assert gate.take_from(0) is input_gate.Polled.MARKER
    assert gate.closed == {0} and not gate.readable(0)
    assert gate.take_from(1) is input_gate.Polled.END_OF_INPUT


def test_event_time_markers_before_the_barrier_are_captured_in_order_with_the_records() -> None:
    chans, gate, captured = capturing_gate()
    chans[0].put(barrier(1, unaligned=True))
    chans[1].put(rows(1))
    chans[1].put(messages.WatermarkMarker(500))
    chans[1].put(messages.IdleMarker(idle=True))
    chans[1].put(rows(2))
    chans[1].put(barrier(1, unaligned=True))
    chans[1].put(messages.WatermarkMarker(900))  # after the barrier: not channel state
    take_all(gate, 0)
    take_all(gate, 1)
    (entries,) = captured
    assert [
        (s, src, p.rows() if isinstance(p, batch_mod.Batch) else p) for s, src, p in entries
    ] == [
        (0, 1, ({"v": 1},)),
        (0, 1, messages.WatermarkMarker(500)),
        (0, 1, messages.IdleMarker(idle=True)),
        (0, 1, ({"v": 2},)),
    ]
