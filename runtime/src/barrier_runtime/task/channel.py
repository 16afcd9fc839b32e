"""Bounded in-memory channels between subtasks, with back-pressure and priority barriers.

A channel is a FIFO of batches and markers from one sending subtask to one
receiving subtask. Its *capacity* bounds the number of data batches queued:
after processing an input batch a sender waits until every one of its output
channels is below capacity again (the batch just produced may overdraw it by
one batch, as Flink's overdraft buffers do). That wait is the back-pressure
that slows sources down to the pace of the slowest consumer.

Markers never count against capacity. An *unaligned* barrier is inserted
with priority: ahead of every queued data batch (but behind earlier priority
markers); :meth:`LocalChannel.put_priority` returns the batches it overtook so
the sender can persist them as channel state.

Every subtask owns a :class:`Signal`; a channel wakes its receiver's signal
when something arrives and its sender's signal when back-pressure lifts (the
take that brings the queue below capacity), not on every take.

:class:`InputChannel` and :class:`OutputChannel` are what a subtask needs
from the two ends; the network endpoints of
:mod:`barrier_runtime.channels.endpoints` provide them too, so a subtask does
not know whether a peer lives in its process or in another worker.
"""

from __future__ import annotations

import collections
import threading
from typing import Protocol

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.channels import endpoints
from barrier_runtime.core import types

Item = endpoints.Item


InFlightItem = endpoints.InFlightItem
"""What an unaligned barrier overtakes and channel state keeps (the network ends' definition)."""


class Signal:
    """A condition a subtask sleeps on; anyone with news about it notifies it."""

    def __init__(self) -> None:
        self.cond = threading.Condition()

    def notify(self) -> None:
        with self.cond:
            self.cond.notify_all()


class InputChannel(Protocol):
    """The receiving end of a channel (used by the receiving subtask's thread only)."""

    def take(self) -> Item | None: ...

    def peek(self) -> Item | None: ...

    def __len__(self) -> int: ...

    def drain_overtaken(self, checkpoint_id: types.CheckpointId) -> list[InFlightItem]:
        """Data (and event-time markers) the priority barrier ``checkpoint_id`` overtook at
        this end, in order (call on taking it)."""
        ...


class OutputChannel(Protocol):
    """The sending end of a channel (used by the sending subtask's thread only)."""

    def put(self, item: Item) -> None: ...

    def put_priority(self, barrier: types.Barrier) -> list[InFlightItem]: ...

    def has_capacity(self) -> bool: ...


class LocalChannel:
    """One sender → one receiver; thread-safe."""

    def __init__(self, capacity: int, sender: Signal, receiver: Signal) -> None:
        if capacity < 1:
            raise ValueError("channel capacity must be at least 1")
        self.capacity = capacity
        self._sender = sender
        self._receiver = receiver
        self._lock = threading.Lock()
        self._items: collections.deque[Item] = collections.deque()
        self._priority = 0
        self._data = 0

    def put(self, item: Item) -> None:
        """Append ``item``; never blocks (callers wait for capacity between batches)."""
        with self._lock:
            self._items.append(item)
            if isinstance(item, batch_mod.Batch):
                self._data += 1
        self._receiver.notify()

    def put_priority(self, barrier: types.Barrier) -> list[InFlightItem]:
        """Insert ``barrier`` ahead of queued data; return the data batches (and event-time
        markers) it overtook, in order."""
        with self._lock:
            overtaken = [i for i in self._items if isinstance(i, endpoints.IN_FLIGHT)]
            self._items.insert(self._priority, barrier)
            self._priority += 1
        self._receiver.notify()
        return overtaken

    def peek(self) -> Item | None:
        with self._lock:
            return self._items[0] if self._items else None

    def take(self) -> Item | None:
        """The next item, or None; wakes the sender only when this take lifts back-pressure.

        A sender waits on its signal for capacity (and, as a source, between polls):
        waking it on every take would make it poll again at once, cutting its output
        into ever smaller batches and costing the GIL a thread switch per batch.
        """
        with self._lock:
            if not self._items:
                return None
            item = self._items.popleft()
            if self._priority:
                self._priority -= 1
            lifted = False
            if isinstance(item, batch_mod.Batch):
                self._data -= 1
                lifted = self._data == self.capacity - 1
        if lifted:
            self._sender.notify()
        return item

    def has_capacity(self) -> bool:
        with self._lock:
            return self._data < self.capacity

    def drain_overtaken(self, checkpoint_id: types.CheckpointId) -> list[InFlightItem]:
        """Always empty: both ends share one queue, so ``put_priority`` reports everything."""
        return []

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    @property
    def queued_batches(self) -> int:
        with self._lock:
            return self._data
