"""A local channel wakes its sender only when a take lifts back-pressure."""

from __future__ import annotations

from barrier_runtime_testing import channels as testing

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.channels import messages
from barrier_runtime.task import channel as channel_mod


def test_the_sender_is_woken_by_the_take_that_brings_the_queue_below_capacity() -> None:
    sender, receiver = testing.TaskSignal(), testing.TaskSignal()
    chan = channel_mod.LocalChannel(3, sender, receiver)  # type: ignore[arg-type]
    for s in range(5):  # two beyond capacity: the overdraft
        chan.put(batch_mod.Batch.from_rows([{"seq": s}]))
    chan.put(messages.END_OF_PARTITION)
    woken_at = []
    while (item := chan.take()) is not None:
        woken_at.append((item, sender.notifications, chan.has_capacity()))
    assert [n for _, n, _ in woken_at] == [0, 0, 1, 1, 1, 1]
    assert [free for _, _, free in woken_at] == [False, False, True, True, True, True]
    assert receiver.notifications == 6
