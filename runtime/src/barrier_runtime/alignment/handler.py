"""The barrier handler of one task's input gate.

What it does
    A task reads an input gate of ``n`` channels. Each channel carries data,
    barriers ``BARRIER(id)``, cancellations ``CANCEL(id)`` and one end of
    partition. The handler turns the barriers of each checkpoint into exactly
    one outcome per checkpoint id at this task: a snapshot (plus, unaligned,
    the end of channel-state capture) or one abort notification.

States
    The current state is one small immutable object (``states`` module):
    ``WaitingForFirstBarrier`` (idle), ``CollectingBarriers`` (aligning,
    delivering channels blocked), ``CollectingBarriersUnaligned`` (snapshot
    taken, capturing records of channels that still owe the barrier) for
    exactly-once, and ``TrackingBarriers`` for at-least-once. Each event goes
    to the state, which returns the next one. The mode (``policy``) decides
    how a state reacts: unaligned mode starts every checkpoint unaligned,
    alternating starts aligned and switches once ``now - barrier.timestamp``
    exceeds ``aligned_timeout``; a barrier flagged ``unaligned`` is followed in
    every exactly-once mode; savepoints are always aligned.

Rules owned here, before a state sees anything
    1. Barrier ids on one channel strictly increase; a repeated or reordered
       barrier (including a second barrier on a blocked channel) raises
       :class:`CorruptStreamError`, as does any event after end of partition.
    2. Reading a blocked channel raises :class:`ChannelBlockedError` (task bug).
    3. A barrier whose id is pending joins it. A barrier above every id seen
       starts a new checkpoint; if that exceeds the concurrency of the mode
       (exactly-once: one) the oldest pending checkpoint is aborted as
       ``SUBSUMED`` first. Any other barrier is ``OBSOLETE`` and ignored: its
       id was completed, aborted, cancelled or passed over. An obsolete
       barrier never blocks its channel, so nothing needs resuming.
    4. ``CANCEL(n)`` aborts every pending id ``<= n`` as ``CANCELLED``; if
       ``n`` was never seen it is aborted too and recorded as seen, so later
       barriers ``n`` are obsolete.
    5. Completing checkpoint ``n`` subsumes every older pending one (only
       possible at-least-once, where several may be pending).
    6. End of partition removes a channel from the set to wait for; closed
       channels count as aligned, so it may complete a pending checkpoint.

Invariants
    * Every started id ends exactly once: completed (``snapshot_state``
      aligned, or ``channel_state_complete`` unaligned) or ``abort_checkpoint``,
      never both; an unaligned snapshot may still be aborted before its channel
      state is complete. Snapshot ids strictly increase.
    * Exactly-once: at most one checkpoint is pending; a channel is blocked
      only while ``CollectingBarriers`` and only if it delivered the pending id.
    * Pending ids are all above the last completed one.

Threading
    None. The handler is called only from the task thread and calls the
    controller synchronously on that thread; it does no I/O and never sleeps.
    Time comes from the injected clock (``check_timeouts`` is polled by the task).
    If a controller call raises, the exception propagates to the task, which
    must fail: the handler may be mid-transition and is not reused.

>>> from barrier_runtime.core import clock
>>> from barrier_runtime_testing import alignment as testing  # tests/support
>>> task = testing.RecordingController()
>>> handler = create_barrier_handler(types.CheckpointConfig(), 2, task, clock.ManualClock())
>>> barrier = types.Barrier(types.CheckpointId(1), timestamp=0.0)
>>> handler.barrier_received(0, barrier)
<BarrierResult.STARTED: 'started'>
>>> handler.is_blocked(0), handler.pending_checkpoint
(True, 1)
>>> handler.barrier_received(1, barrier)
<BarrierResult.COMPLETED: 'completed'>
>>> task.calls
[('block', 0), ('snapshot', 1, 'aligned'), ('unblock_all',)]
"""

from __future__ import annotations

import enum

from barrier_runtime.alignment import controller as control
from barrier_runtime.alignment import errors, gate, states
from barrier_runtime.alignment import policy as policies
from barrier_runtime.core import clock as clocks
from barrier_runtime.core import types


class BarrierResult(enum.Enum):
    """What a barrier did at this gate."""

    STARTED = "started"
    """First barrier of a new checkpoint; it is now pending (unaligned: snapshot already taken)."""
    COLLECTED = "collected"
    """A further barrier of the pending checkpoint; still waiting for other channels."""
    COMPLETED = "completed"
    """Nothing left to wait for: aligned snapshot taken, or unaligned channel state complete."""
    OBSOLETE = "obsolete"
    """Ignored: its checkpoint was completed, aborted, cancelled or passed over here."""


class BarrierHandler:
    """Holds the current state and applies the cross-cutting rules; see the module essay."""

    def __init__(
        self,
        num_channels: int,
        task: control.BarrierHandlerController,
        clock: clocks.Clock,
        alignment: policies.AlignmentPolicy,
    ) -> None:
        if num_channels < 1:
            raise ValueError(f"a gate needs at least one input channel, got {num_channels}")
        self._book = gate.GateBook(num_channels, task, clock, alignment)
        self._state: states.BarrierHandlerState = (
            states.TrackingBarriers()
            if alignment.mode is policies.AlignmentMode.TRACKING
            else states.WaitingForFirstBarrier()
        )

    # -- queries ---------------------------------------------------------------

    @property
    def state(self) -> states.BarrierHandlerState:
        """The current state object (for inspection and tests)."""
        return self._state

    @property
    def policy(self) -> policies.AlignmentPolicy:
        return self._book.policy

    @property
    def pending_checkpoint(self) -> types.CheckpointId | None:
        """The oldest checkpoint still waiting for barriers (exactly-once: the only one)."""
        return next(iter(self._book.pending), None)

    @property
    def latest_checkpoint_id(self) -> types.CheckpointId | None:
        """The highest id seen in a barrier or a cancellation, None before any."""
        return self._book.latest_seen

    @property
    def open_channels(self) -> int:
        return self._book.num_channels - len(self._book.closed)

    def is_blocked(self, channel: control.ChannelId) -> bool:
        return channel in self._book.blocked

    # -- events ----------------------------------------------------------------

    def barrier_received(self, channel: control.ChannelId, barrier: types.Barrier) -> BarrierResult:
        checkpoint_id = barrier.checkpoint_id
        self._check_open(channel, f"barrier {checkpoint_id}")
        self._check_increasing(channel, checkpoint_id)
        self._check_unblocked(channel, f"barrier {checkpoint_id}")
        book = self._book
        book.last_barrier[channel] = checkpoint_id
        barrier = book.policy.normalise(barrier)
        started = checkpoint_id not in book.pending
        if started:
            if not book.is_new(checkpoint_id):
                return BarrierResult.OBSOLETE
            while len(book.pending) >= book.policy.max_pending:
                self._abort(next(iter(book.pending)), types.FailureReason.SUBSUMED)
            book.start(barrier)
        book.deliver(checkpoint_id, channel)
        self._state = self._state.barrier_received(book, channel, barrier)
        self._subsume_older_than_completed()
        if checkpoint_id not in book.pending:
            return BarrierResult.COMPLETED
        return BarrierResult.STARTED if started else BarrierResult.COLLECTED

    def cancel_received(
        self, channel: control.ChannelId, checkpoint_id: types.CheckpointId
    ) -> None:
        self._check_open(channel, f"CANCEL({checkpoint_id})")
        self._check_unblocked(channel, f"CANCEL({checkpoint_id})")
        book = self._book
        for pending_id in book.pending_up_to(checkpoint_id):
            self._abort(pending_id, types.FailureReason.CANCELLED)
        if book.is_new(checkpoint_id):
            book.see(checkpoint_id)
            book.task.abort_checkpoint(checkpoint_id, types.FailureReason.CANCELLED)

    def end_of_partition(self, channel: control.ChannelId) -> None:
        self._check_open(channel, "end of partition")
        self._check_unblocked(channel, "end of partition")
        self._book.closed.add(channel)
        self._state = self._state.end_of_partition(self._book)
        self._subsume_older_than_completed()

    def record_received(self, channel: control.ChannelId) -> types.CheckpointId | None:
        """Call before processing each data batch; returns the checkpoint it is channel state of."""
        self._check_open(channel, "a record")
        self._check_unblocked(channel, "a record")
        capturing = self._state.capturing_checkpoint
        if capturing is None or self._book.has_delivered(capturing, channel):
            return None
        return capturing

    def check_timeouts(self) -> None:
        """Alternating mode: switch a too-long alignment to unaligned. Cheap; poll freely."""
        self._state = self._state.timeout_checked(self._book)

    # -- rules -------------------------------------------------------------------

    def _abort(self, checkpoint_id: types.CheckpointId, reason: types.FailureReason) -> None:
        self._book.forget(checkpoint_id)
        self._state = self._state.checkpoint_aborted(self._book, checkpoint_id)
        self._book.task.abort_checkpoint(checkpoint_id, reason)

    def _subsume_older_than_completed(self) -> None:
        last_completed = self._book.last_completed
        if last_completed is not None:
            for pending_id in self._book.older_pending(last_completed):
                self._abort(pending_id, types.FailureReason.SUBSUMED)

    def _check_open(self, channel: control.ChannelId, what: str) -> None:
        if not 0 <= channel < self._book.num_channels:
            raise ValueError(
                f"channel {channel} does not exist: the gate has {self._book.num_channels} channels"
            )
        if channel in self._book.closed:
            raise errors.CorruptStreamError(
                f"{what} arrived on channel {channel} after its end of partition"
            )

    def _check_increasing(
        self, channel: control.ChannelId, checkpoint_id: types.CheckpointId
    ) -> None:
        last = self._book.last_barrier.get(channel)
        if last is not None and checkpoint_id <= last:
            raise errors.CorruptStreamError(
                f"channel {channel} delivered barrier {checkpoint_id} after barrier {last}: "
                "barrier ids on a channel must strictly increase (repeated or reordered barrier)"
            )

    def _check_unblocked(self, channel: control.ChannelId, what: str) -> None:
        if channel in self._book.blocked:
            raise errors.ChannelBlockedError(
                f"the task read {what} from channel {channel}, which is blocked for "
                f"checkpoint {self.pending_checkpoint}; read it only after unblock_all"
            )


def create_barrier_handler(
    config: types.CheckpointConfig,
    num_channels: int,
    controller: control.BarrierHandlerController,
    clock: clocks.Clock,
) -> BarrierHandler:
    """The handler for a gate of ``num_channels`` channels under ``config``.

    AT_LEAST_ONCE -> tracking; exactly-once: aligned, unaligned (``aligned_timeout == 0``)
    or alternating (``aligned_timeout > 0``).
    """
    return BarrierHandler(
        num_channels, controller, clock, policies.AlignmentPolicy.from_config(config)
    )
