"""Endpoint logic without sockets: credits, overdraft, priority barriers, failure, writer order."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest
from barrier_runtime_testing import channels as testing

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.channels import connection, endpoints, errors, frames, messages
from barrier_runtime.core import types


class FakeLink:
    """A connection double that records granted credits and can be told to fail."""

    def __init__(self, peer: int = 3) -> None:
        self._peer = peer
        self._cond = threading.Condition()
        self.granted: list[tuple[int, int]] = []
        self.reason: str | None = None

    @property
    def peer(self) -> int:
        return self._peer

    @property
    def cond(self) -> threading.Condition:
        return self._cond

    def check(self, channel: int) -> None:
        if self.reason is not None:
            raise errors.ChannelClosedError(self._peer, "10.0.0.3:7000", self.reason, channel)

    def grant(self, channel: int, batches: int) -> None:
        self.granted.append((channel, batches))


def batch(*seqs: int) -> batch_mod.Batch:
    return batch_mod.Batch.from_rows([{"seq": s} for s in seqs])


def seqs(items: Sequence[object]) -> list[int]:
    return [r["seq"] for b in items if isinstance(b, batch_mod.Batch) for r in b.rows()]


def barrier(cid: int, *, unaligned: bool = True) -> types.Barrier:
    return types.Barrier(types.CheckpointId(cid), 0.0, unaligned=unaligned)


def drain(out: endpoints.RemoteOutputChannel) -> list[tuple[endpoints.Item, bool]]:
    sent = []
    with out._cond:
        while (nxt := out._next()) is not None:
            sent.append(nxt)
    return sent


# -- sender --------------------------------------------------------------------------


def test_nothing_is_sent_before_the_receiver_opens_the_channel_with_credits() -> None:
    out = endpoints.RemoteOutputChannel(FakeLink(), 1, testing.TaskSignal())
    out.put(messages.CancelMarker(types.CheckpointId(1)))
    out.put(batch(1))
    assert drain(out) == []
    assert not out.has_capacity()
    out._granted(1)
    assert [type(i) for i, _ in drain(out)] == [messages.CancelMarker, batch_mod.Batch]


def test_capacity_follows_credits_and_the_overdraft_is_bounded() -> None:
    out = endpoints.RemoteOutputChannel(FakeLink(), 1, testing.TaskSignal())
    out._granted(2)
    produced = 0
    while out.has_capacity():  # a task puts while it has capacity (one batch per step here)
        out.put(batch(produced))
        produced += 1
        drain(out)
    assert produced == 2 and out.credits == 0
    out.put(batch(produced))  # the overdraft: the batch of the step that hit the limit
    assert drain(out) == [] and out.queued_batches == 1 and not out.has_capacity()
    out._granted(1)
    assert len(drain(out)) == 1 and out.queued_batches == 0


def test_markers_need_no_credit_but_keep_their_place_behind_data() -> None:
    out = endpoints.RemoteOutputChannel(FakeLink(), 1, testing.TaskSignal())
    out._granted(1)
    out.put(batch(1))
    out.put(batch(2))
    out.put(barrier(5, unaligned=False))
    assert seqs([i for i, _ in drain(out)]) == [1]  # 2 waits for a credit, the barrier behind it
    out._granted(1)
    sent = drain(out)
    assert isinstance(sent[0][0], batch_mod.Batch) and sent[1] == (
        barrier(5, unaligned=False),
        False,
    )


def test_put_priority_overtakes_queued_data_and_returns_exactly_that_data() -> None:
    out = endpoints.RemoteOutputChannel(FakeLink(), 1, testing.TaskSignal())
    out._granted(1)
    for s in range(4):
        out.put(batch(s))
    drain(out)  # batch 0 went to the socket
    out.put(messages.CancelMarker(types.CheckpointId(3)))
    first = out.put_priority(barrier(7))
    second = out.put_priority(barrier(8))
    assert seqs(first) == [1, 2, 3] and seqs(second) == [1, 2, 3]
    out._granted(3)
    sent = drain(out)
    assert [i for i, _ in sent[:2]] == [barrier(7), barrier(8)]
    assert [p for _, p in sent] == [True, True, False, False, False, False]
    assert seqs([i for i, _ in sent if isinstance(i, batch_mod.Batch)]) == [1, 2, 3]


def test_items_after_end_of_partition_are_dropped() -> None:
    out = endpoints.RemoteOutputChannel(FakeLink(), 1, testing.TaskSignal())
    out._granted(5)
    out.put(messages.END_OF_PARTITION)
    out.put(batch(1))
    assert out.put_priority(barrier(2)) == []
    assert [i for i, _ in drain(out)] == [messages.END_OF_PARTITION]
    assert out.finished


def test_a_failed_link_fails_every_operation_of_an_unfinished_output() -> None:
    link = FakeLink(peer=4)
    out = endpoints.RemoteOutputChannel(link, 6, testing.TaskSignal())
    link.reason = "connection lost: reset by peer"
    for op in (out.has_capacity, lambda: out.put(batch(1)), lambda: out.put_priority(barrier(1))):
        with pytest.raises(
            errors.ChannelClosedError, match=r"channel 6 with worker 4 .*reset by peer"
        ):
            op()


def test_a_finished_output_never_fails() -> None:
    link = FakeLink()
    out = endpoints.RemoteOutputChannel(link, 6, testing.TaskSignal())
    out._granted(1)
    out.put(messages.END_OF_PARTITION)
    drain(out)
    link.reason = "the peer closed the connection"
    assert out.has_capacity()


# -- receiver ------------------------------------------------------------------------


def receiver(
    capacity: int = 4,
) -> tuple[endpoints.RemoteInputChannel, FakeLink, testing.TaskSignal]:
    link, signal = FakeLink(), testing.TaskSignal()
    return endpoints.RemoteInputChannel(link, 2, signal, capacity), link, signal


def test_taking_a_data_batch_returns_one_credit_and_arrivals_wake_the_task() -> None:
    inp, link, signal = receiver()
    inp._deliver(batch(1))
    inp._deliver(frames.BarrierFrame(barrier(1, unaligned=False), priority=False))
    assert signal.notifications == 2 and len(inp) == 2
    assert seqs([inp.take()]) == [1]
    assert inp.take() == barrier(1, unaligned=False)
    assert inp.take() is None
    assert link.granted == [(2, 1)]


def test_credits_go_back_in_groups_while_data_is_queued_and_at_once_when_none_is() -> None:
    inp, link, _ = receiver(capacity=8)  # groups of 8 // 4 = 2
    for s in range(5):
        inp._deliver(batch(s))
    assert seqs([inp.take() for _ in range(5)]) == [0, 1, 2, 3, 4]
    assert link.granted == [(2, 2), (2, 2), (2, 1)]  # the last one: nothing left to take


def test_credits_wake_the_sending_task_only_when_they_lift_its_back_pressure() -> None:
    link, signal = connection.OutboundLink(0, 1), testing.TaskSignal()
    out = link.register(5, signal)
    link._credit(5, 2)  # opens the channel: the task may be waiting for that
    assert signal.notifications == 1 and out.has_capacity()
    out.put(batch(1))
    link._credit(5, 1)  # it had capacity already: nothing to wake
    assert signal.notifications == 1
    out.put(batch(2))
    out.put(batch(3))
    out.put(batch(4))
    assert not out.has_capacity()
    link._credit(5, 1)
    assert signal.notifications == 1 and not out.has_capacity()  # still blocked
    link._credit(5, 1)
    assert signal.notifications == 2 and out.has_capacity()


def test_a_priority_barrier_overtakes_received_data_which_is_reported_and_still_delivered() -> None:
    inp, _, _ = receiver(capacity=4)
    inp._deliver(batch(1))
    inp._deliver(messages.CancelMarker(types.CheckpointId(2)))
    inp._deliver(batch(2))
    inp._deliver(frames.BarrierFrame(barrier(3), priority=True))
    inp._deliver(frames.BarrierFrame(barrier(4), priority=True))
    inp._deliver(batch(3))
    assert inp.peek() == barrier(3)
    assert inp.take() == barrier(3)
    assert seqs(inp.drain_overtaken(types.CheckpointId(3))) == [1, 2]
    assert inp.drain_overtaken(types.CheckpointId(3)) == []  # claimed once
    assert inp.take() == barrier(4)
    assert seqs(inp.drain_overtaken(types.CheckpointId(4))) == [1, 2]
    rest = [inp.take() for _ in range(4)]
    assert isinstance(rest[1], messages.CancelMarker)
    assert seqs([b for b in rest if isinstance(b, batch_mod.Batch)]) == [1, 2, 3]


def test_unclaimed_overtaken_sets_are_released_by_a_later_barrier() -> None:
    inp, _, _ = receiver()
    inp._deliver(batch(1))
    inp._deliver(frames.BarrierFrame(barrier(3), priority=True))
    inp.take()
    inp.take()
    inp._deliver(frames.BarrierFrame(barrier(4, unaligned=False), priority=False))
    inp.take()
    assert inp._overtaken == {}


def test_aligned_barriers_do_not_overtake() -> None:
    inp, _, _ = receiver()
    inp._deliver(batch(1))
    inp._deliver(frames.BarrierFrame(barrier(3, unaligned=False), priority=False))
    assert isinstance(inp.take(), batch_mod.Batch)
    assert inp.drain_overtaken(types.CheckpointId(3)) == []


@pytest.mark.parametrize(
    ("extra", "match"),
    [(batch(9), "beyond the 2 granted credits"), (frames.Credit(1), "unexpected Credit")],
)
def test_a_sender_breaking_the_protocol_is_a_frame_error(extra: frames.Message, match: str) -> None:
    inp, _, _ = receiver(capacity=2)
    inp._deliver(batch(1))
    inp._deliver(batch(2))
    with pytest.raises(errors.FrameError, match=match):
        inp._deliver(extra)


def test_a_failed_link_fails_an_input_unless_it_has_ended() -> None:
    inp, link, _ = receiver()
    inp._deliver(batch(1))
    link.reason = "connection lost"
    with pytest.raises(errors.ChannelClosedError, match="channel 2 with worker 3"):
        inp.take()
    ended, link2, _ = receiver()
    ended._deliver(batch(1))
    ended._deliver(messages.END_OF_PARTITION)
    link2.reason = "the peer closed the connection"
    assert isinstance(ended.take(), batch_mod.Batch)
    assert ended.take() == messages.END_OF_PARTITION


# -- writer ordering -----------------------------------------------------------------------


def test_the_writer_sends_priority_frames_of_every_channel_first_then_round_robin() -> None:
    link = connection.OutboundLink(worker=0, peer=1)
    signal = testing.TaskSignal()
    a, b = link.register(1, signal), link.register(2, signal)
    link._credit(1, 10)
    link._credit(2, 10)
    for s in range(3):
        a.put(batch(10 + s))
        b.put(batch(20 + s))
    b.put_priority(barrier(5))
    a.put_priority(barrier(5))
    with link.cond:
        picked = link._pick()
    assert [(c, p) for c, _, p in picked[:2]] == [(1, True), (2, True)]
    data = [(c, seqs([i])) for c, i, _ in picked[2:] if isinstance(i, batch_mod.Batch)]
    assert data == [(1, [10]), (2, [20]), (2, [21]), (1, [11]), (1, [12]), (2, [22])]


def test_credits_that_arrive_before_the_output_is_registered_are_kept() -> None:
    link = connection.OutboundLink(worker=0, peer=1)
    link._credit(4, 3)
    out = link.register(4, testing.TaskSignal())
    assert out.credits == 3 and out.has_capacity()


def test_a_priority_barrier_put_before_the_channel_opens_waits_then_goes_first() -> None:
    link = connection.OutboundLink(worker=0, peer=1)
    out = link.register(1, testing.TaskSignal())
    out.put(batch(1))
    assert seqs(out.put_priority(barrier(2))) == [1]
    with link.cond:
        assert link._pick() == []
    link._credit(1, 1)
    with link.cond:
        picked = link._pick()
    assert [(i, p) for _, i, p in picked[:1]] == [(barrier(2), True)]
    assert seqs([i for _, i, _ in picked[1:]]) == [1]
