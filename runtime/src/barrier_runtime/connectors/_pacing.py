"""How much a generated partition may emit next: its batch size, its end, and its rate.

>>> budget = EmissionBudget(batch_size=100, end=250, rate=None, position=200)
>>> budget.next_count(200), budget.next_count(250)
(50, None)

A rate-limited budget hands out what is due as soon as it is due, never waiting
to fill ``batch_size`` (at 1,000 events/s, 5 ms after opening, 5 events):

>>> now = [0.0]
>>> paced = EmissionBudget(batch_size=100, end=None, rate=1000.0, position=0,
...                        clock=lambda: now[0], wall_clock_ns=lambda: 10**12)
>>> now[0] = 0.005
>>> paced.next_count(0)
5
>>> paced.created_ns(0, 2).tolist()
[1000000000000, 1000001000000]
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import numpy.typing as npt


class EmissionBudget:
    """Counts for a partition that emits events ``position, position + 1, …`` up to ``end``.

    ``rate`` (events/s) paces emission from the moment the partition opened at
    ``position``: a replay after a restore starts its own clock, it does not
    burst to catch up with the original run.
    """

    def __init__(
        self,
        *,
        batch_size: int,
        end: int | None,
        rate: float | None,
        position: int,
        clock: Callable[[], float] = time.monotonic,
        wall_clock_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self._batch_size = batch_size
        self._end = end
        self._rate = rate
        self._clock = clock
        self._started = clock()
        self._wall_clock_ns = wall_clock_ns
        self._wall_started_ns = wall_clock_ns()
        self._start_position = position

    def next_count(self, position: int) -> int | None:
        """Events to emit from ``position`` now: ``None`` at the end, ``0`` to wait for the rate."""
        if self._end is not None and position >= self._end:
            return None
        count = self._batch_size
        if self._end is not None:
            count = min(count, self._end - position)
        if self._rate is not None:
            allowed = int((self._clock() - self._started) * self._rate) + self._start_position
            count = max(0, min(count, allowed - position))
        return count

    def created_ns(self, position: int, count: int) -> npt.NDArray[np.int64]:
        """Creation stamps (ns since the epoch) of events ``position … position + count - 1``.

        With a rate, each event was created when the rate made it due (so the
        wait for the next poll counts as latency); without one, now.
        """
        if self._rate is None:
            return np.full(count, self._wall_clock_ns(), dtype=np.int64)
        offsets = np.arange(position, position + count, dtype=np.int64) - self._start_position
        return self._wall_started_ns + (offsets * (1e9 / self._rate)).astype(np.int64)
