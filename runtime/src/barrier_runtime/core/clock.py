"""Time as an injectable dependency.

Protocol and policy code never calls ``time.time()`` itself: it receives a
:class:`Clock`, so tests can drive time by hand with :class:`ManualClock`.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    """A source of wall-clock time in seconds since the epoch."""

    def now(self) -> float: ...


class SystemClock:
    """The real clock."""

    def now(self) -> float:
        return time.time()


class ManualClock:
    """A clock that moves only when told to; thread-safe.

    >>> clock = ManualClock(100.0)
    >>> clock.advance(2.5)
    >>> clock.now()
    102.5
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        with self._lock:
            self._now += seconds

    def set(self, now: float) -> None:
        with self._lock:
            if now < self._now:
                raise ValueError("a clock cannot go backwards")
            self._now = now
