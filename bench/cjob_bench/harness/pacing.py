"""A paced sender's schedule: item ``i`` is due at ``start + i / rate``; how far behind it fell.

The live producers of the Kafka benchmarks (W4's and the Nexmark feed) send what is
due, stamp each item when they hand it over, and report the worst lag behind the
schedule: a busy machine makes them send late, never early, and the report says so.

>>> pacer = Pacer(rate=1000.0, clock=iter([0.0, 0.0105, 0.011]).__next__)
>>> pacer.due(sent=0)                    # at 10.5 ms, items 0..10 are due
11
>>> pacer.wait(sent=11)                  # 11 sent: item 11 is due at 11 ms
>>> pacer.behind_ms
10.5
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class Pacer:
    """The schedule of ``rate`` items per second from the moment it is made."""

    def __init__(
        self, rate: float, clock: Callable[[], float] = time.monotonic, sleep_max: float = 0.001
    ) -> None:
        self.rate = rate
        self._clock = clock
        self._sleep_max = sleep_max
        self.start = clock()
        self.first_wall = time.time()
        self.behind = 0.0
        """The most the sender was behind its schedule when it sent, in seconds."""
        self.last_wall: float | None = None

    @property
    def behind_ms(self) -> float:
        return round(self.behind * 1000, 1)

    def due(self, sent: int) -> int:
        """How many items are due by now in all (``sent`` of them are already sent)."""
        elapsed = self._clock() - self.start
        due = int(elapsed * self.rate) + 1
        if due > sent:
            self.behind = max(self.behind, elapsed - sent / self.rate)
        return due

    def wait(self, sent: int) -> None:
        """Sleep a little if the next item is not due yet (at most ``sleep_max``)."""
        wait = sent / self.rate - (self._clock() - self.start)
        if wait > 0:
            time.sleep(min(wait, self._sleep_max))

    def finished(self) -> None:
        """The last item was handed over (before the producer's final flush)."""
        self.last_wall = time.time()

    def summary(self, sent: int, undelivered: int) -> dict[str, Any]:
        """The sender's report: its wall-clock span (to :meth:`finished`), the rate it
        achieved, how far behind it fell."""
        last_wall = time.time() if self.last_wall is None else self.last_wall
        span = last_wall - self.first_wall
        return {
            "undelivered": undelivered,
            "first_wall": self.first_wall,
            "last_wall": last_wall,
            "seconds": round(span, 3),
            "achieved_rate": round(sent / max(span, 1e-9)),
            "max_behind_schedule_ms": self.behind_ms,
        }
