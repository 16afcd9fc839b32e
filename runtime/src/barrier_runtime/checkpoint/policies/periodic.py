"""When the next periodic checkpoint is due.

The schedule is "one checkpoint every ``interval`` seconds, counted from the
last checkpoint that was actually triggered" (fixed delay, not fixed rate: a
late tick does not cause a burst of catch-up checkpoints). Manual checkpoints
reset the schedule too, so an operator-driven trigger and the periodic one do
not pile up. Savepoints do not move the schedule.

>>> schedule = PeriodicTriggerPolicy(interval=10.0)
>>> schedule.start(now=100.0)
>>> schedule.is_due(109.9), schedule.is_due(110.0)
(False, True)
>>> schedule.checkpoint_triggered(now=112.0)
>>> schedule.next_due
122.0
"""

from __future__ import annotations


class PeriodicTriggerPolicy:
    """Paces periodic checkpoints by ``interval`` seconds."""

    def __init__(self, interval: float) -> None:
        if interval <= 0:
            raise ValueError(f"checkpoint interval must be positive, got {interval}")
        self._interval = interval
        self._next_due = 0.0

    @property
    def interval(self) -> float:
        return self._interval

    @property
    def next_due(self) -> float:
        """The earliest time the next periodic checkpoint may be triggered."""
        return self._next_due

    def start(self, now: float) -> None:
        """(Re)start the schedule: the first periodic checkpoint is due one interval from now."""
        self._next_due = now + self._interval

    def checkpoint_triggered(self, now: float) -> None:
        """A checkpoint (periodic or manual) was triggered at ``now``."""
        self._next_due = now + self._interval

    def is_due(self, now: float) -> bool:
        return now >= self._next_due
