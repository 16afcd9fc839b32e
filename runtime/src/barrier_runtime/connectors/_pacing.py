"""How much a generated partition may emit next: its batch size, its end, and its rate.

>>> budget = EmissionBudget(batch_size=100, end=250, rate=None, position=200)
>>> budget.next_count(200), budget.next_count(250)
(50, None)
"""

from __future__ import annotations

import time
from collections.abc import Callable


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
    ) -> None:
        self._batch_size = batch_size
        self._end = end
        self._rate = rate
        self._clock = clock
        self._started = clock()
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
