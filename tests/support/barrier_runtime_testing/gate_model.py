"""The model around the real input gate in the alignment property test: upstream senders, a
receiving end that lets unaligned barriers overtake queued data, and a task that records
what the gate asked of it."""

from __future__ import annotations

import collections
import dataclasses
import itertools

from barrier_runtime import alignment
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.core import types
from barrier_runtime.task import channel as channel_mod
from barrier_runtime.task import input_gate

Result = alignment.BarrierResult


class ReceivingEnd:
    """An input channel as the network endpoint behaves: priority barriers overtake data here.

    A priority barrier goes ahead of the data batches received after the last
    marker; those batches stay queued (taken after it) and are reported once by
    ``drain_overtaken``.
    """

    def __init__(self) -> None:
        self.items: collections.deque[channel_mod.Item] = collections.deque()
        self.overtaken: dict[int, list[batch_mod.Batch]] = {}

    def put(self, item: channel_mod.Item) -> None:
        self.items.append(item)

    def put_priority(self, barrier: types.Barrier) -> None:
        at = len(self.items)
        while at > 0 and isinstance(self.items[at - 1], batch_mod.Batch):
            at -= 1
        overtaken = [
            item
            for item in itertools.islice(self.items, at, None)
            if isinstance(item, batch_mod.Batch)
        ]
        if overtaken:
            self.overtaken[barrier.checkpoint_id] = overtaken
        self.items.insert(at, barrier)

    def take(self) -> channel_mod.Item | None:
        return self.items.popleft() if self.items else None

    def peek(self) -> channel_mod.Item | None:
        return self.items[0] if self.items else None

    def __len__(self) -> int:
        return len(self.items)

    def drain_overtaken(self, checkpoint_id: types.CheckpointId) -> list[batch_mod.Batch]:
        return self.overtaken.pop(checkpoint_id, [])


@dataclasses.dataclass
class Upstream:
    """One channel as its upstream subtask wrote it; the gate reads ``end``."""

    end: ReceivingEnd = dataclasses.field(default_factory=ReceivingEnd)
    values: list[int] = dataclasses.field(default_factory=list)  # index = sequence number
    barrier_at: dict[int, int] = dataclasses.field(default_factory=dict)  # id -> records before
    cancelled: set[int] = dataclasses.field(default_factory=set)
    last_barrier: int | None = None  # a barrier it may still cancel afterwards
    ended: bool = False

    def records_before(self, cid: int) -> int | None:
        """How many records precede barrier ``cid`` here.

        A channel that ended without barrier ``cid`` and without passing it
        (no later barrier, no cancellation) is indistinguishable from one that
        ended first: all its records precede the barrier. None if it passed it.
        """
        if cid in self.barrier_at:
            return self.barrier_at[cid]
        passed = any(b > cid for b in self.barrier_at) or any(c >= cid for c in self.cancelled)
        return len(self.values) if self.ended and not passed else None


@dataclasses.dataclass(frozen=True)
class Snapshot:
    barrier: types.Barrier
    read: tuple[int, ...]  # records processed per channel when the snapshot was taken
    total: int  # the operator state: sum of processed records


class TaskModel:
    """The gate's checkpointing port, recording, plus a model operator summing records."""

    def __init__(self, num_channels: int) -> None:
        self.read = [0] * num_channels
        self.total = 0
        self.ever_blocked = False
        self.snapshots: list[Snapshot] = []
        self.captured: dict[int, list[tuple[int, int, int]]] = {}
        self.channel_state_done: list[int] = []
        self.aborted: list[int] = []

    def process(self, data: input_gate.DataBatch) -> None:
        for row in data.batch.rows():
            assert row["seq"] == self.read[data.channel], "records must be read in channel order"
            self.read[data.channel] += 1
            self.total += row["value"]

    def snapshot(
        self, barrier: types.Barrier, alignment_duration: float, *, channel_state: bool
    ) -> None:
        assert alignment_duration >= 0
        assert not channel_state or barrier.unaligned
        self.snapshots.append(Snapshot(barrier, tuple(self.read), self.total))

    def channel_state_complete(
        self, checkpoint_id: types.CheckpointId, captured: input_gate.CapturedInput
    ) -> None:
        self.channel_state_done.append(checkpoint_id)
        self.captured[checkpoint_id] = [
            (side, row["seq"], row["value"])
            for side, _, batch in captured
            if isinstance(batch, batch_mod.Batch)
            for row in batch.rows()
        ]

    def abort(self, checkpoint_id: types.CheckpointId, reason: types.FailureReason) -> None:
        self.aborted.append(checkpoint_id)
