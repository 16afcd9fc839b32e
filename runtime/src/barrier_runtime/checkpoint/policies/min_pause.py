"""The minimum pause between the end of one checkpoint and the start of the next.

As in Flink, the pause is measured from the moment the last checkpoint
*completed* (was committed), not from when it was triggered: a slow checkpoint
therefore cannot leave the job with no time to make progress between
snapshots. Before any checkpoint has completed there is nothing to pause after.

>>> pause = MinPausePolicy(min_pause=5.0)
>>> pause.remaining(now=0.0)
0.0
>>> pause.checkpoint_completed(now=100.0)
>>> pause.remaining(now=103.0), pause.allows(now=105.0)
(2.0, True)
"""

from __future__ import annotations


class MinPausePolicy:
    """Keeps ``min_pause`` seconds between a completed checkpoint and the next trigger."""

    def __init__(self, min_pause: float) -> None:
        if min_pause < 0:
            raise ValueError(f"min_pause must not be negative, got {min_pause}")
        self._min_pause = min_pause
        self._last_completion: float | None = None

    @property
    def min_pause(self) -> float:
        return self._min_pause

    def checkpoint_completed(self, now: float) -> None:
        """A checkpoint or savepoint finished committing at ``now``."""
        if self._last_completion is None or now > self._last_completion:
            self._last_completion = now

    def remaining(self, now: float) -> float:
        """Seconds still to wait before a new checkpoint may start (0 when allowed)."""
        if self._last_completion is None:
            return 0.0
        return max(0.0, self._last_completion + self._min_pause - now)

    def allows(self, now: float) -> bool:
        return self.remaining(now) == 0.0
