"""The states of a barrier handler, one small immutable class each.

Every event method takes the :class:`~barrier_runtime.alignment.controller.AlignmentContext`
and returns the next state (often ``self``). The handler has already applied
the cross-cutting rules (obsolete, subsumed, cancelled, corrupt) and recorded
the delivering channel before a state sees an event, so a state only ever
hears about the checkpoint it is working on.

Exactly-once (aligned, unaligned, alternating)::

    WaitingForFirstBarrier --barrier, aligned--------------> CollectingBarriers
    WaitingForFirstBarrier --barrier, unaligned or late----> CollectingBarriersUnaligned
    CollectingBarriers ------last barrier / end of input---> WaitingForFirstBarrier   (snapshot)
    CollectingBarriers ------unaligned barrier / timeout---> CollectingBarriersUnaligned
    CollectingBarriersUnaligned --last barrier / end-------> WaitingForFirstBarrier
    any --checkpoint aborted-------------------------------> WaitingForFirstBarrier

Each arrow into ``CollectingBarriersUnaligned`` goes straight on to
``WaitingForFirstBarrier`` when nothing is left to wait for.

At-least-once has a single state, :class:`TrackingBarriers`.
"""

from __future__ import annotations

import abc
import dataclasses

from barrier_runtime.alignment import controller
from barrier_runtime.core import types

Context = controller.AlignmentContext


class BarrierHandlerState(abc.ABC):
    """Base of all states: by default an event changes nothing."""

    __slots__ = ()

    @property
    def capturing_checkpoint(self) -> types.CheckpointId | None:
        """The checkpoint whose channel state is being captured, if any."""
        return None

    @abc.abstractmethod
    def barrier_received(
        self, ctx: Context, channel: controller.ChannelId, barrier: types.Barrier
    ) -> BarrierHandlerState:
        """A barrier of the checkpoint this state works on (or a new one) arrived."""

    def end_of_partition(self, ctx: Context) -> BarrierHandlerState:
        """A channel closed; fewer channels to wait for."""
        return self

    def timeout_checked(self, ctx: Context) -> BarrierHandlerState:
        """The task asks whether alignment has taken too long."""
        return self

    def checkpoint_aborted(
        self, ctx: Context, checkpoint_id: types.CheckpointId
    ) -> BarrierHandlerState:
        """The handler aborted ``checkpoint_id`` (subsumed or cancelled)."""
        return self


@dataclasses.dataclass(frozen=True, slots=True)
class WaitingForFirstBarrier(BarrierHandlerState):
    """Exactly-once, idle: no checkpoint pending, nothing blocked."""

    def barrier_received(
        self, ctx: Context, channel: controller.ChannelId, barrier: types.Barrier
    ) -> BarrierHandlerState:
        if ctx.starts_unaligned(barrier):
            return _start_unaligned(ctx, barrier)
        if ctx.all_barriers_received(barrier.checkpoint_id):
            ctx.snapshot_aligned(barrier)
            return self
        if ctx.is_timed_out(barrier):
            return _start_unaligned(ctx, barrier)
        ctx.block_channel(channel)
        return CollectingBarriers(barrier)


@dataclasses.dataclass(frozen=True, slots=True)
class CollectingBarriers(BarrierHandlerState):
    """Exactly-once, aligning: channels that delivered ``barrier`` are blocked."""

    barrier: types.Barrier
    """The first barrier of the pending checkpoint; it is the one snapshotted and forwarded."""

    def barrier_received(
        self, ctx: Context, channel: controller.ChannelId, barrier: types.Barrier
    ) -> BarrierHandlerState:
        if ctx.starts_unaligned(barrier):
            return self._switch_to_unaligned(ctx)
        if ctx.all_barriers_received(self.barrier.checkpoint_id):
            return self._complete(ctx)
        if ctx.is_timed_out(self.barrier):
            return self._switch_to_unaligned(ctx)
        ctx.block_channel(channel)
        return self

    def end_of_partition(self, ctx: Context) -> BarrierHandlerState:
        if ctx.all_barriers_received(self.barrier.checkpoint_id):
            return self._complete(ctx)
        return self

    def timeout_checked(self, ctx: Context) -> BarrierHandlerState:
        if ctx.is_timed_out(self.barrier):
            return self._switch_to_unaligned(ctx)
        return self

    def checkpoint_aborted(
        self, ctx: Context, checkpoint_id: types.CheckpointId
    ) -> BarrierHandlerState:
        if checkpoint_id != self.barrier.checkpoint_id:
            return self
        ctx.unblock_all()
        return WaitingForFirstBarrier()

    def _complete(self, ctx: Context) -> BarrierHandlerState:
        ctx.snapshot_aligned(self.barrier)
        ctx.unblock_all()
        return WaitingForFirstBarrier()

    def _switch_to_unaligned(self, ctx: Context) -> BarrierHandlerState:
        # Snapshot first: the blocked channels hold post-barrier records that
        # must not reach the operators before the snapshot is taken.
        ctx.snapshot_unaligned(self.barrier)
        ctx.unblock_all()
        return CollectingBarriersUnaligned(self.barrier.checkpoint_id).settle(ctx)


@dataclasses.dataclass(frozen=True, slots=True)
class CollectingBarriersUnaligned(BarrierHandlerState):
    """Exactly-once, snapshot taken: records from channels still owing the barrier are captured."""

    checkpoint_id: types.CheckpointId

    @property
    def capturing_checkpoint(self) -> types.CheckpointId | None:
        return self.checkpoint_id

    def barrier_received(
        self, ctx: Context, channel: controller.ChannelId, barrier: types.Barrier
    ) -> BarrierHandlerState:
        return self.settle(ctx)

    def end_of_partition(self, ctx: Context) -> BarrierHandlerState:
        return self.settle(ctx)

    def checkpoint_aborted(
        self, ctx: Context, checkpoint_id: types.CheckpointId
    ) -> BarrierHandlerState:
        return WaitingForFirstBarrier() if checkpoint_id == self.checkpoint_id else self

    def settle(self, ctx: Context) -> BarrierHandlerState:
        """Finish the capture if no open channel still owes the barrier."""
        if ctx.all_barriers_received(self.checkpoint_id):
            ctx.channel_state_complete(self.checkpoint_id)
            return WaitingForFirstBarrier()
        return self


@dataclasses.dataclass(frozen=True, slots=True)
class TrackingBarriers(BarrierHandlerState):
    """At-least-once: never blocks; snapshots a checkpoint once every open channel delivered it."""

    def barrier_received(
        self, ctx: Context, channel: controller.ChannelId, barrier: types.Barrier
    ) -> BarrierHandlerState:
        if ctx.all_barriers_received(barrier.checkpoint_id):
            ctx.snapshot_aligned(barrier)
        return self

    def end_of_partition(self, ctx: Context) -> BarrierHandlerState:
        for barrier in ctx.pending_barriers():
            if ctx.all_barriers_received(barrier.checkpoint_id):
                ctx.snapshot_aligned(barrier)
        return self


def _start_unaligned(ctx: Context, barrier: types.Barrier) -> BarrierHandlerState:
    ctx.snapshot_unaligned(barrier)
    return CollectingBarriersUnaligned(barrier.checkpoint_id).settle(ctx)
