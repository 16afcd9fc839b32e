"""Timers of one keyed step in one subtask: event time and processing time, per key.

A keyed function registers a timer for its current key: *event time* (fires
when the step's watermark reaches it) or *processing time* (fires when the
clock does). A timer is ``(domain, time, key, namespace)``; the namespace
tells a key's timers apart (a window operator uses the window). Registering
the same timer twice keeps one; deleting one that does not exist is a no-op.

Order
    Due timers fire in ascending ``(time, key, namespace)`` order, keys of
    different types ordered by type name. The order depends only on the
    timers, never on when or on which subtask they were registered, so a job
    restored at another parallelism fires the same timers in the same order
    per key.

Storage
    The timers live in a :class:`~barrier_runtime.state.keyed.KeyedState`
    whose value per key is the tuple of its timers. It is snapshotted, split
    into key groups and restored like any keyed state, which is how timers
    follow their keys to another subtask on a rescale. Heaps, one per domain,
    are rebuilt on restore. A deleted timer stays in its heap until it comes
    up, and is skipped then.

>>> timers = TimerService((0, 127), 128)
>>> timers.register(Domain.EVENT_TIME, "b", 20)
>>> timers.register(Domain.EVENT_TIME, "a", 20)
>>> timers.register(Domain.EVENT_TIME, "a", 10, namespace=(0, 11))
>>> timers.register(Domain.EVENT_TIME, "c", 99)
>>> [(t.time, t.key) for t in timers.pop_due(Domain.EVENT_TIME, 20)]
[(10, 'a'), (20, 'a'), (20, 'b')]
>>> timers.next_time(Domain.EVENT_TIME)
99
>>> restored = TimerService((0, 127), 128)
>>> restored.restore([timers.snapshot_copy("windows").encode()])
>>> [t.key for t in restored.pop_due(Domain.EVENT_TIME, 100)]
['c']
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from barrier_runtime.state import keyed

CONTENT = b"timers"
"""The content mark of a timer state object (:data:`~barrier_runtime.state.keyed.CONTENT_KEY`)."""

Namespace = tuple[int, ...]
"""Tells a key's timers apart: ``()`` for none, ``(start, end)`` for a window."""


class Domain(enum.IntEnum):
    EVENT_TIME = 0
    PROCESSING_TIME = 1


@dataclass(frozen=True, slots=True, order=True)
class Timer:
    time: int
    key: Any
    namespace: Namespace = ()


_Entry = tuple[int, str, Any, Namespace]
"""A heap entry: (time, key type name, key, namespace)."""


class TimerService:
    """The timers of the keys in key groups ``key_group_range``; see the module essay."""

    def __init__(self, key_group_range: tuple[int, int], max_parallelism: int) -> None:
        self._held = keyed.KeyedState(key_group_range, max_parallelism, content=CONTENT)
        """Key to the tuple of its ``(domain, time, namespace)`` timers (the stored form)."""
        self._heaps: tuple[list[_Entry], list[_Entry]] = ([], [])

    def __len__(self) -> int:
        return sum(len(t) for t in self._held.values.values())

    def register(self, domain: Domain, key: Any, time: int, namespace: Namespace = ()) -> None:
        """Fire at ``time`` for ``key`` (once, however often it is registered)."""
        entry = (int(domain), int(time), tuple(namespace))
        held = self._held.values.get(key, ())
        if entry in held:
            return
        self._held.put(key, (*held, entry))
        heapq.heappush(self._heaps[domain], (int(time), type(key).__name__, key, entry[2]))

    def delete(self, domain: Domain, key: Any, time: int, namespace: Namespace = ()) -> None:
        """Forget that timer, if it exists."""
        entry = (int(domain), int(time), tuple(namespace))
        held = self._held.values.get(key, ())
        if entry not in held:
            return
        rest = tuple(e for e in held if e != entry)
        self._held.put(key, rest or None)

    def next_time(self, domain: Domain) -> int | None:
        """The time of the earliest pending timer of ``domain``, if any."""
        heap = self._heaps[domain]
        while heap and not self._pending(domain, heap[0]):
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def pop_due(self, domain: Domain, until: int) -> list[Timer]:
        """Remove and return the timers of ``domain`` at or before ``until``, in firing order.

        A timer registered by the caller while it handles these (at or before
        ``until``) is returned by the next call.
        """
        heap, fired = self._heaps[domain], []
        while heap and heap[0][0] <= until:
            time, _, key, namespace = heapq.heappop(heap)
            if self._pending(domain, (time, "", key, namespace)):
                self.delete(domain, key, time, namespace)
                fired.append(Timer(time, key, namespace))
        return fired

    @property
    def state(self) -> keyed.KeyedState:
        """The timers in their stored form (what snapshots copy)."""
        return self._held

    def snapshot_copy(self, step_id: str) -> keyed.Copy:
        """The timers as of now, to encode on the upload thread (see ``KeyedState``)."""
        return self._held.snapshot_copy(step_id)

    def restore(self, blobs: Iterable[bytes]) -> None:
        """Load the timers of this subtask's key groups and rebuild the heaps."""
        self._held.restore(blobs)
        for key, held in self._held.values.items():
            self._held.values[key] = tuple((int(d), int(t), tuple(ns)) for d, t, ns in held)
        heaps: tuple[list[_Entry], list[_Entry]] = ([], [])
        for key, held in self._held.values.items():
            for domain, time, namespace in held:
                heaps[domain].append((time, type(key).__name__, key, namespace))
        for heap in heaps:
            heapq.heapify(heap)
        self._heaps = heaps

    def _pending(self, domain: Domain, entry: _Entry) -> bool:
        time, _, key, namespace = entry
        return (int(domain), time, namespace) in self._held.values.get(key, ())
