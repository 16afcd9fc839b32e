"""The input gate of one subtask: its input channels, the barrier handler and in-flight capture.

What it owns
    The receiving ends of the subtask's input channels, which of them are
    *blocked* (by the barrier handler, while aligning) and *closed* (after
    their end of partition), the round-robin input selection, the
    :class:`~barrier_runtime.alignment.handler.BarrierHandler`, and — for
    unaligned checkpoints — the capture of the data that belongs to a
    checkpoint's channel state. It is the handler's
    :class:`~barrier_runtime.alignment.controller.BarrierHandlerController`:
    nobody else blocks or unblocks a channel.

What it does not own
    The snapshot itself. Through the narrow :class:`GateCheckpointing` port it
    asks the subtask-checkpointing part to snapshot, hands it the captured
    channel state once capture is final, and tells it about aborts.

States of a channel
    open → (blocked ↔ open)* → closed. A blocked channel is never read (its
    data stays queued in the channel); a closed channel is never read again.
    The gate has reached END_OF_INPUT when every channel is closed.

Capture of checkpoint *n* (unaligned only), in replay order per channel
    1. starts when the handler asks for snapshot *n* unaligned while a channel
       is still open; if the barrier that triggered it overtook data at the
       receiving end (``drain_overtaken``), that data opens the capture;
    2. every data batch the handler reports as channel state of *n*
       (``record_received``) is appended before it is processed;
    3. a later priority barrier *n* that overtook data appends that data;
    4. ends when the handler reports channel state complete: the capture goes
       to the checkpointing part (:meth:`GateCheckpointing.channel_state_complete`),
       or when *n* is aborted (by the handler, or by the coordinator through
       :meth:`InputGate.drop_capture`): the capture is discarded.

Invariants
    * The gate's blocked set and the handler's ``is_blocked`` agree.
    * At most one capture per checkpoint id; a capture is handed over or
      discarded exactly once.
    * Data batches of a channel are returned in channel order.

Threading
    None: everything runs on the subtask's thread. Only ``signal`` (notified
    when channels are unblocked) is shared with other threads.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from typing import Protocol

from barrier_runtime.alignment import handler as alignment_handler
from barrier_runtime.alignment import watermark_valve
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.channels import messages
from barrier_runtime.core import clock as clocks
from barrier_runtime.core import types
from barrier_runtime.task import channel as channel_mod
from barrier_runtime.task import snapshots

CapturedInput = list[tuple[int, int, snapshots.Captured]]
"""Channel state captured at the input, in capture order: (input side, sending subtask,
data batch or event-time marker)."""


class GateCheckpointing(Protocol):
    """What the gate asks of the subtask-checkpointing part. Called on the task thread."""

    def snapshot(
        self, barrier: types.Barrier, alignment_duration: float, *, channel_state: bool
    ) -> None:
        """Snapshot now and forward ``barrier``; ``channel_state``: input capture follows."""

    def channel_state_complete(
        self, checkpoint_id: types.CheckpointId, captured: CapturedInput
    ) -> None:
        """Unaligned capture of ``checkpoint_id`` is final (``captured`` may be empty)."""

    def abort(self, checkpoint_id: types.CheckpointId, reason: types.FailureReason) -> None:
        """The handler aborted ``checkpoint_id`` (exactly once per id)."""


class Polled(enum.Enum):
    """What :meth:`InputGate.poll` did when it returned no data."""

    NOTHING = "nothing"
    """No readable channel had anything."""
    MARKER = "marker"
    """A barrier, cancellation or end of partition was handled."""
    END_OF_INPUT = "end_of_input"
    """The last open channel just closed."""


@dataclasses.dataclass(frozen=True, slots=True)
class DataBatch:
    """A data batch to process, with the input side of the channel it came from."""

    channel: int
    side: int
    batch: batch_mod.Batch


class InputGate:
    """Input channels plus barrier handler; see the module essay."""

    def __init__(
        self,
        inputs: Sequence[channel_mod.InputChannel],
        sides: Sequence[int],
        config: types.CheckpointConfig,
        clock: clocks.Clock,
        checkpointing: GateCheckpointing,
        signal: channel_mod.Signal | None = None,
        valve: watermark_valve.WatermarkValve | None = None,
        senders: Sequence[int] | None = None,
    ) -> None:
        """``valve``: combines the channels' watermarks (one is made when not given);
        ``senders``: the sending subtask of each channel (recorded with channel state)."""
        if len(inputs) != len(sides):
            raise ValueError(f"{len(inputs)} input channels but {len(sides)} sides")
        self._senders = list(senders) if senders is not None else [-1] * len(inputs)
        self.valve = valve if valve is not None else watermark_valve.WatermarkValve(len(inputs))
        self._time_change = watermark_valve.Output()
        self._inputs = list(inputs)
        self._sides = list(sides)
        self._checkpointing = checkpointing
        self._signal = signal
        self._blocked: set[int] = set()
        self._closed: set[int] = set()
        self._rr = 0
        self._captures: dict[types.CheckpointId, CapturedInput] = {}
        self._arriving: tuple[types.CheckpointId, CapturedInput] | None = None
        """A priority barrier being handed to the handler, with the data it overtook here."""
        self.handler = alignment_handler.create_barrier_handler(
            config, len(self._inputs), self, clock
        )

    # -- queries -------------------------------------------------------------------

    @property
    def num_channels(self) -> int:
        return len(self._inputs)

    @property
    def blocked(self) -> frozenset[int]:
        return frozenset(self._blocked)

    @property
    def closed(self) -> frozenset[int]:
        return frozenset(self._closed)

    @property
    def capturing(self) -> frozenset[types.CheckpointId]:
        """Checkpoints whose input channel state is being captured."""
        return frozenset(self._captures)

    def readable(self, channel: int) -> bool:
        return channel not in self._blocked and channel not in self._closed

    def input_ready(self) -> bool:
        """Some readable channel holds an item."""
        return any(len(c) > 0 for i, c in enumerate(self._inputs) if self.readable(i))

    # -- reading ---------------------------------------------------------------------

    def poll(self, *, markers_only: bool = False) -> DataBatch | Polled:
        """Take the next item of the readable channels, round robin.

        ``markers_only`` (while back-pressured): only a channel whose head is not
        data is read, so markers are never stuck behind data that cannot move.
        """
        n = len(self._inputs)
        for step in range(n):
            ch = (self._rr + step) % n
            if not self.readable(ch):
                continue
            if markers_only:
                head = self._inputs[ch].peek()
                if head is None or isinstance(head, batch_mod.Batch):
                    continue
            polled = self.take_from(ch)
            if polled is not Polled.NOTHING:
                self._rr = ch + 1
                return polled
        return Polled.NOTHING

    def take_from(self, channel: int) -> DataBatch | Polled:
        """Take one item of ``channel`` if it is readable; markers are handled here."""
        if not self.readable(channel):
            return Polled.NOTHING
        item = self._inputs[channel].take()
        if item is None:
            return Polled.NOTHING
        if isinstance(item, batch_mod.Batch):
            self._capture(channel, item)
            return DataBatch(channel, self._sides[channel], item)
        if isinstance(item, types.Barrier):
            self._barrier_taken(channel, item)
        elif isinstance(item, messages.CancelMarker):
            self.handler.cancel_received(channel, item.checkpoint_id)
        elif isinstance(item, messages.WatermarkMarker):
            self._capture(channel, item)
            self._time(self.valve.watermark(channel, item.value))
        elif isinstance(item, messages.IdleMarker):
            self._capture(channel, item)
            self._time(self.valve.status(channel, idle=item.idle))
        else:
            self._closed.add(channel)
            self.handler.end_of_partition(channel)
            self._time(self.valve.closed(channel))
            if len(self._closed) == len(self._inputs):
                return Polled.END_OF_INPUT
        return Polled.MARKER

    def _capture(self, channel: int, item: channel_mod.InFlightItem) -> None:
        """Keep ``item`` as channel state if it arrived before its channel's barrier
        of a checkpoint whose input is being captured."""
        capture_for = self.handler.record_received(channel)
        capture = None if capture_for is None else self._captures.get(capture_for)
        if capture is not None:
            capture.append((self._sides[channel], self._senders[channel], item))

    def _entries(self, channel: int, items: Sequence[channel_mod.InFlightItem]) -> CapturedInput:
        side, sender = self._sides[channel], self._senders[channel]
        return [(side, sender, item) for item in items]

    def take_time_change(self) -> watermark_valve.Output:
        """What the markers handled since the last call changed at the valve's output
        (a new watermark, a new idle status); call after every poll that returned no data."""
        change, self._time_change = self._time_change, watermark_valve.Output()
        return change

    def _time(self, out: watermark_valve.Output) -> None:
        if not out:
            return
        before = self._time_change
        self._time_change = watermark_valve.Output(
            out.watermark if out.watermark is not None else before.watermark,
            out.idle if out.idle is not None else before.idle,
        )

    def check_timeouts(self) -> None:
        self.handler.check_timeouts()

    def _barrier_taken(self, channel: int, barrier: types.Barrier) -> None:
        """Hand ``barrier`` to the handler; data it overtook at this end is channel state.

        A network input channel keeps the batches a priority barrier overtook on
        arrival (they are still taken, after the barrier). They were sent before
        the barrier, so they belong to checkpoint *n*'s channel state: appended
        now if *n* is already capturing, else by :meth:`snapshot_state` when
        this barrier triggers the snapshot.
        """
        n = barrier.checkpoint_id
        overtaken = self._entries(channel, self._inputs[channel].drain_overtaken(n))
        capture = self._captures.get(n)
        if overtaken and capture is not None:
            capture.extend(overtaken)
        elif overtaken:
            self._arriving = (n, overtaken)
        try:
            self.handler.barrier_received(channel, barrier)
        finally:
            self._arriving = None

    # -- the coordinator's word ----------------------------------------------------------

    def drop_capture(self, checkpoint_id: types.CheckpointId, *, and_older: bool = False) -> None:
        """Stop capturing for ``checkpoint_id`` (and older ones): it was aborted or completed."""
        for cid in list(self._captures):
            if cid == checkpoint_id or (and_older and cid < checkpoint_id):
                del self._captures[cid]

    # -- BarrierHandlerController (called by the handler only) -----------------------------

    def block_channel(self, channel: int) -> None:
        self._blocked.add(channel)

    def unblock_all(self) -> None:
        self._blocked.clear()
        if self._signal is not None:
            self._signal.notify()

    def snapshot_state(self, barrier: types.Barrier, alignment_duration: float) -> None:
        n = barrier.checkpoint_id
        capture = barrier.unaligned and len(self._closed) < len(self._inputs)
        self._checkpointing.snapshot(barrier, alignment_duration, channel_state=capture)
        if not capture:
            return
        captured: CapturedInput = []
        arriving = self._arriving
        if arriving is not None and arriving[0] == n:
            captured.extend(arriving[1])
        self._captures[n] = captured

    def channel_state_complete(self, checkpoint_id: types.CheckpointId) -> None:
        captured = self._captures.pop(checkpoint_id, None)
        self._checkpointing.channel_state_complete(checkpoint_id, captured or [])

    def abort_checkpoint(
        self, checkpoint_id: types.CheckpointId, reason: types.FailureReason
    ) -> None:
        self._captures.pop(checkpoint_id, None)
        self._checkpointing.abort(checkpoint_id, reason)
