"""The two ends of a logical channel between worker processes, drop-in for ``LocalChannel``.

A subtask uses a :class:`RemoteOutputChannel` exactly as it uses a local
output channel (``put``, ``put_priority``, ``has_capacity``) and a
:class:`RemoteInputChannel` as a local input channel (``take``, ``peek``,
``len``). The connection threads (``connection`` module) feed them.

Credit-based flow control
    The receiver grants the sender credits: first its buffer capacity (in
    data batches), then a credit back for each data batch its task *takes*
    (in groups of ``capacity // 4`` while more data is queued, at once when
    the queue holds no more data). The sender's writer sends a data batch
    only with a credit in hand, so at most ``capacity`` batches are ever
    received and not yet taken. ``has_capacity()`` is ``queued_batches < credits``: while the
    receiver keeps up, batches leave as soon as they are put; once credits
    are exhausted it is False and the sending task stops processing (it may
    have overdrawn by the batches of one input batch — the overdraft). The
    first CREDIT frame also *opens* the channel: nothing, not even a marker,
    is sent before the receiver has registered it. Markers (barriers,
    cancellations, end of partition) never consume credits, but keep their
    place behind the data queued before them.

Unaligned (priority) barriers
    ``put_priority(barrier)`` inserts the barrier ahead of every data batch
    still queued at the sender (behind earlier priority barriers), returns
    those batches — they are still sent, after the barrier — and the writer
    sends priority frames before anything else on the connection. At the
    receiver a priority barrier likewise goes ahead of the data received but
    not yet taken; that data is the *receiver-overtaken* set of checkpoint
    *n* for this channel, kept until the task claims it with
    :meth:`RemoteInputChannel.drain_overtaken` (the batches also stay queued
    and are taken normally after the barrier).

Channel state of checkpoint *n* on one channel, in replay order
    1. records the receiving task took from the channel after its snapshot
       *n* and before taking the channel's barrier *n* (the barrier handler's
       ``record_received`` capture; empty when this channel's barrier
       triggered the snapshot);
    2. ``drain_overtaken(n)``: received, not yet taken when the barrier
       arrived, in arrival order;
    3. ``put_priority``'s return value at the sender: queued at the sender,
       in put order (persisted by the *sender* as output channel state).
    The three sets are disjoint and together are exactly the records the
    sender emitted before barrier *n* that the receiver's snapshot *n* does
    not reflect. Appending (2) to the pending snapshot's input state at the
    moment the task takes barrier *n* keeps 1 → 2 in order.

Failure
    If the connection fails, every later operation on a channel that has not
    finished raises :class:`~barrier_runtime.channels.errors.ChannelClosedError`
    naming the peer; the task's :class:`Wakeable` is notified so it notices at
    once. An input channel that received END_OF_PARTITION, or an output
    channel whose END_OF_PARTITION went to the socket, has finished: it never
    raises and serves what it still holds.

Threading
    Methods without a leading underscore are called by the owning task's
    thread; ``_granted``/``_next``/``_deliver`` by the connection threads.
"""

from __future__ import annotations

import collections
import threading
from typing import Protocol

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.channels import errors, frames, messages
from barrier_runtime.core import types

InFlightItem = batch_mod.Batch | messages.WatermarkMarker | messages.IdleMarker
"""What an unaligned barrier overtakes and channel state keeps: data and event-time markers."""
IN_FLIGHT = (batch_mod.Batch, messages.WatermarkMarker, messages.IdleMarker)
Item = (
    batch_mod.Batch
    | types.Barrier
    | messages.CancelMarker
    | messages.EndOfPartition
    | messages.WatermarkMarker
    | messages.IdleMarker
)
"""What travels on a channel (``barrier_runtime.task.channel.Item`` too)."""


class Wakeable(Protocol):
    """What a channel notifies: the owning task's ``Signal``."""

    def notify(self) -> None: ...


class Link(Protocol):
    """What an endpoint needs from its connection."""

    @property
    def peer(self) -> int: ...

    @property
    def cond(self) -> threading.Condition:
        """Guards the state of the connection and of its output channels; wakes its writer."""

    def check(self, channel: int) -> None:
        """Raise ChannelClosedError if the connection has failed or was closed."""

    def grant(self, channel: int, batches: int) -> None:
        """Send ``batches`` credits for ``channel`` (input side only)."""


class RemoteOutputChannel:
    """The sending end of one logical channel; see the module essay."""

    def __init__(self, link: Link, channel: int, sender: Wakeable) -> None:
        self.channel = channel
        self.peer = link.peer
        self._link = link
        self._cond = link.cond
        self._sender = sender
        self._items: collections.deque[Item] = collections.deque()
        self._priority = 0
        self._data = 0
        self._credits = 0
        self._opened = False
        self._ended = False
        self._finished = False

    def put(self, item: Item) -> None:
        """Queue ``item`` for sending; never blocks (wait for ``has_capacity`` between batches).

        Items put after END_OF_PARTITION are dropped: the receiver stops
        reading a channel at its end, as it does with a local channel.
        """
        with self._cond:
            self._check()
            if self._ended:
                return
            self._items.append(item)
            if isinstance(item, batch_mod.Batch):
                self._data += 1
            elif isinstance(item, messages.EndOfPartition):
                self._ended = True
            self._cond.notify_all()

    def put_priority(self, barrier: types.Barrier) -> list[InFlightItem]:
        """Send ``barrier`` ahead of queued data; return the data batches it overtook.

        The overtaken batches are still sent, after the barrier; the caller
        persists them as output channel state of ``barrier``'s checkpoint.
        """
        with self._cond:
            self._check()
            if self._ended:
                return []
            overtaken = [i for i in self._items if isinstance(i, IN_FLIGHT)]
            self._items.insert(self._priority, barrier)
            self._priority += 1
            self._cond.notify_all()
            return overtaken

    def has_capacity(self) -> bool:
        """False while the receiver has granted no room for the queued data (back-pressure)."""
        with self._cond:
            if self._finished:
                return True
            self._check()
            return self._data < self._credits

    def __len__(self) -> int:
        """Items (data and markers) queued here, not yet handed to the socket writer."""
        with self._cond:
            return len(self._items)

    @property
    def queued_batches(self) -> int:
        with self._cond:
            return self._data

    @property
    def credits(self) -> int:
        """Data batches the receiver has room for that are not yet sent."""
        with self._cond:
            return self._credits

    @property
    def finished(self) -> bool:
        """END_OF_PARTITION was handed to the socket writer; nothing more will be sent."""
        with self._cond:
            return self._finished

    def _check(self) -> None:
        if not self._finished:
            self._link.check(self.channel)

    # -- connection side (``cond`` held) ----------------------------------------------

    def _granted(self, batches: int) -> bool:
        """Add credits; True when they lift back-pressure (the sender may be waiting)."""
        blocked = self._data >= self._credits
        self._credits += batches
        self._opened = True
        return blocked and self._data < self._credits

    @property
    def _waiting_for_credits(self) -> bool:
        """Data is queued that the writer can send only with a new credit."""
        return self._data > 0 and self._credits <= 0

    def _wake(self) -> None:
        self._sender.notify()

    @property
    def _idle(self) -> bool:
        return not self._items

    def _next_priority(self) -> types.Barrier | None:
        """The next priority barrier, if the channel is open and has one."""
        if not self._opened or not self._priority:
            return None
        self._priority -= 1
        barrier = self._items.popleft()
        assert isinstance(barrier, types.Barrier)
        return barrier

    def _next(self) -> tuple[Item, bool] | None:
        """The next item the writer may send, and whether it goes with priority."""
        barrier = self._next_priority()
        if barrier is not None:
            return barrier, True
        if not self._opened or not self._items:
            return None
        head = self._items[0]
        if isinstance(head, batch_mod.Batch):
            if self._credits <= 0:
                return None
            self._credits -= 1
            self._data -= 1
        elif isinstance(head, messages.EndOfPartition):
            self._finished = True
        return self._items.popleft(), False


class RemoteInputChannel:
    """The receiving end of one logical channel; see the module essay."""

    def __init__(self, link: Link, channel: int, receiver: Wakeable, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("channel capacity must be at least 1")
        self.channel = channel
        self.peer = link.peer
        self.capacity = capacity
        self._link = link
        self._receiver = receiver
        self._lock = threading.Lock()
        self._items: collections.deque[Item] = collections.deque()
        self._priority = 0
        self._data = 0
        self._ended = False
        self._overtaken: dict[types.CheckpointId, list[InFlightItem]] = {}
        self._unreturned = 0
        self._return_every = max(1, capacity // 4)

    def take(self) -> Item | None:
        """The next item, or None if nothing is queued; taking a data batch frees a credit.

        Freed credits go back in groups of ``capacity // 4`` while data is still
        queued here (each return wakes the connection's writer thread), and at once
        when the queue holds no more data, so a sender never waits on credits this
        end keeps while it has nothing left to take.
        """
        with self._lock:
            self._check()
            if not self._items:
                return None
            item = self._items.popleft()
            if self._priority:
                self._priority -= 1
            returned = 0
            if isinstance(item, batch_mod.Batch):
                self._data -= 1
                self._unreturned += 1
                if not self._data or self._unreturned >= self._return_every:
                    returned, self._unreturned = self._unreturned, 0
            elif isinstance(item, types.Barrier):
                self._forget_overtaken_before(item.checkpoint_id)
        if returned:
            self._link.grant(self.channel, returned)
        return item

    def peek(self) -> Item | None:
        with self._lock:
            self._check()
            return self._items[0] if self._items else None

    def __len__(self) -> int:
        with self._lock:
            self._check()
            return len(self._items)

    @property
    def queued_batches(self) -> int:
        with self._lock:
            return self._data

    @property
    def ended(self) -> bool:
        """END_OF_PARTITION has arrived (it may not be taken yet)."""
        with self._lock:
            return self._ended

    def drain_overtaken(self, checkpoint_id: types.CheckpointId) -> list[InFlightItem]:
        """The data batches priority barrier ``checkpoint_id`` overtook here, in arrival order.

        Call it when the task takes that barrier (item 2 of the replay order in
        the module essay). Returns ``[]`` for an aligned barrier, when nothing
        was overtaken, or when called twice. Sets of older checkpoints are
        forgotten when a newer barrier is taken or drained.
        """
        with self._lock:
            self._forget_overtaken_before(checkpoint_id)
            return self._overtaken.pop(checkpoint_id, [])

    def _forget_overtaken_before(self, checkpoint_id: types.CheckpointId) -> None:
        # Unclaimed sets are released once a later barrier is taken, so a task that
        # never claims them (aligned mode) holds at most one set.
        for older in [c for c in self._overtaken if c < checkpoint_id]:
            del self._overtaken[older]

    def _check(self) -> None:
        if not self._ended:
            self._link.check(self.channel)

    # -- connection side ----------------------------------------------------------

    def _deliver(self, message: frames.Message) -> None:
        """Queue a frame's message (reader thread); FrameError if the sender broke the protocol."""
        with self._lock:
            self._enqueue(message)
        self._receiver.notify()

    def _enqueue(self, message: frames.Message) -> None:
        if self._ended:
            raise errors.FrameError(f"{type(message).__name__} after END_OF_PARTITION")
        if isinstance(message, batch_mod.Batch):
            if self._data >= self.capacity:
                raise errors.FrameError(f"data beyond the {self.capacity} granted credits")
            self._items.append(message)
            self._data += 1
        elif isinstance(message, frames.BarrierFrame):
            if message.priority:
                barrier = message.barrier
                overtaken = [i for i in self._items if isinstance(i, IN_FLIGHT)]
                if overtaken:
                    self._overtaken[barrier.checkpoint_id] = overtaken
                self._items.insert(self._priority, barrier)
                self._priority += 1
            else:
                self._items.append(message.barrier)
        elif isinstance(
            message,
            messages.CancelMarker
            | messages.EndOfPartition
            | messages.WatermarkMarker
            | messages.IdleMarker,
        ):
            self._items.append(message)
            self._ended = isinstance(message, messages.EndOfPartition)
        else:
            raise errors.FrameError(f"unexpected {type(message).__name__} on a data channel")

    def _wake(self) -> None:
        self._receiver.notify()
