"""A peer worker that leaves after the attempt's ``Shutdown`` is not a failure.

A stop with a savepoint (and the end of a finished job) posts ``Shutdown`` to every worker;
each worker's subtasks leave as they get to it, and a worker whose subtasks left closes its
connections. A subtask of another worker still in the middle of a batch then finds its
channel to that worker closed. Found by the Nexmark table (q5 at P = 2, a stop right after a
burst of input): the job failed after its savepoint had completed.

Here slice 0 of a ``source → key_by → stateful_map → sink`` plan runs on its own (the single-partition
source is read there), its channels to slice 1 remote ones whose peer "leaves": the third batch sent to slice 1 posts
``Shutdown`` to the sending subtask and raises :class:`ChannelClosedError`, the order the
two events had in the failed run. Without a ``Shutdown`` the same error still fails the
attempt.
"""

from __future__ import annotations

import tempfile
import threading

from waiting import wait_until

from barrier_runtime.api import Dataflow
from barrier_runtime.channels.errors import ChannelClosedError
from barrier_runtime.core import faults, task_messages
from barrier_runtime.core.clock import ManualClock
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.graph import plan as plan_mod
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.task import attempt as attempt_mod
from barrier_runtime.task import channel as channel_mod
from barrier_runtime.task import subtask as subtask_mod
from barrier_runtime.testing import TestingSink, TestingSource

P = 2


class _Gone(Exception):
    pass


class _PeerThatLeaves:
    """Remote channels to slice 1: inputs that never deliver, outputs that accept batches
    until the peer leaves."""

    def __init__(self, *, post_shutdown_first: bool) -> None:
        self.post_shutdown_first = post_shutdown_first
        self.subtasks: list[subtask_mod.Subtask] = []
        self.sent = 0
        self.left = threading.Event()

    def input(
        self, channel_id: int, sender_slice: int, receiver: channel_mod.Signal, capacity: int
    ) -> channel_mod.InputChannel:
        return _SilentInput()

    def output(
        self, channel_id: int, receiver_slice: int, sender: channel_mod.Signal
    ) -> channel_mod.OutputChannel:
        return _LeavingOutput(self, channel_id)


class _SilentInput:
    def take(self) -> None:
        return None

    def peek(self) -> None:
        return None

    def __len__(self) -> int:
        return 0

    def drain_overtaken(self, checkpoint_id: object) -> list[object]:
        return []


class _LeavingOutput:
    def __init__(self, peer: _PeerThatLeaves, channel_id: int) -> None:
        self.peer, self.channel_id = peer, channel_id

    def put(self, item: object) -> None:
        self.peer.sent += 1
        if self.peer.sent < 3:
            return
        if not self.peer.left.is_set():
            self.peer.left.set()
            if self.peer.post_shutdown_first:
                for s in self.peer.subtasks:
                    s.post(task_messages.Shutdown())
        raise ChannelClosedError(1, "127.0.0.1:1", "the peer closed the connection", 6)

    def put_priority(self, barrier: object) -> list[object]:
        return []

    def has_capacity(self) -> bool:
        return True


def _count(state: int | None, record: dict[str, int]) -> tuple[int, list[dict[str, int]]]:
    n = (state or 0) + 1
    return n, [{"k": record["k"], "n": n}]


def _run_slice_0(peer: _PeerThatLeaves) -> attempt_mod.AttemptContext:
    flow = Dataflow("peer-left")
    rows = [{"k": i % 8, "v": i} for i in range(4_000)]
    flow.source("events", TestingSource(rows, batch_size=50)).key_by(
        "by", lambda r: r["k"]
    ).stateful_map("count", _count).sink("out", TestingSink())
    plan = plan_mod.plan(flow, P)
    ctx = attempt_mod.AttemptContext(
        plan=plan,
        config=CheckpointConfig(),
        clock=ManualClock(),
        store=CheckpointStore(open_object_store(tempfile.mkdtemp()), "t/peer-left"),
        fault_injector=faults.FaultInjector(),
        attempt=1,
        restore_point=None,
        acknowledge=lambda ack: None,
        decline=lambda cid, task, reason: None,
        tasks=[k for k in plan.task_keys() if k.subtask == 0],
    )
    subtasks = attempt_mod.build_subtasks(ctx, 4, hosted_slice=0, remote=peer)
    peer.subtasks = subtasks
    threads = [threading.Thread(target=s.run, daemon=True) for s in subtasks]
    for t in threads:
        t.start()
    wait_until(peer.left.is_set, 30, "a batch sent to the peer that left")
    if not peer.post_shutdown_first:  # the attempt fails; the driver would stop it
        wait_until(lambda: ctx.failure is not None, 30, "the attempt failed")
        for s in subtasks:
            s.post(task_messages.Shutdown())
    for t in threads:
        t.join(30)
        assert not t.is_alive()
    return ctx


def test_a_peer_leaving_after_shutdown_ends_the_subtask_without_a_failure() -> None:
    ctx = _run_slice_0(_PeerThatLeaves(post_shutdown_first=True))
    assert ctx.failure is None


def test_a_peer_leaving_before_shutdown_still_fails_the_attempt() -> None:
    ctx = _run_slice_0(_PeerThatLeaves(post_shutdown_first=False))
    assert isinstance(ctx.failure, ChannelClosedError), ctx.failure
