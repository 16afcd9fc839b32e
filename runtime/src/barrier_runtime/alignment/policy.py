"""Which way a gate handles barriers: the mode chosen from the job's checkpoint config.

>>> from barrier_runtime.core import types
>>> config = types.CheckpointConfig(unaligned=True, aligned_timeout=2.0)
>>> policy = AlignmentPolicy.from_config(config)
>>> policy.mode
<AlignmentMode.ALTERNATING: 'alternating'>
>>> barrier = types.Barrier(types.CheckpointId(1), timestamp=100.0)
>>> policy.is_timed_out(barrier, now=101.0), policy.is_timed_out(barrier, now=102.5)
(False, True)
"""

from __future__ import annotations

import dataclasses
import enum

from barrier_runtime.core import types

MAX_TRACKED_CHECKPOINTS = 50
"""At-least-once gates track this many concurrent checkpoints; older ones are subsumed."""


class AlignmentMode(enum.Enum):
    """The four barrier handlers (docs/architecture.md, 'Barrier handling')."""

    TRACKING = "tracking"
    """At-least-once: never block, count barriers per id (concurrent checkpoints allowed)."""
    ALIGNED = "aligned"
    """Exactly-once: block channels until every open channel delivered the barrier."""
    UNALIGNED = "unaligned"
    """Exactly-once: snapshot at the first barrier, capture in-flight records as channel state."""
    ALTERNATING = "alternating"
    """Exactly-once: start aligned, switch to unaligned after ``aligned_timeout``."""


@dataclasses.dataclass(frozen=True, slots=True)
class AlignmentPolicy:
    """The mode of one gate plus the timing rule that drives the alternating switch."""

    mode: AlignmentMode
    aligned_timeout: float = 0.0
    """Alternating only: seconds since ``barrier.timestamp`` after which alignment gives up."""

    def __post_init__(self) -> None:
        if self.aligned_timeout < 0:
            raise ValueError("aligned_timeout must not be negative")
        if self.mode is AlignmentMode.ALTERNATING and self.aligned_timeout == 0:
            raise ValueError("alternating alignment needs a positive aligned_timeout")

    @classmethod
    def from_config(cls, config: types.CheckpointConfig) -> AlignmentPolicy:
        """AT_LEAST_ONCE -> tracking; exactly-once: aligned, unaligned or alternating."""
        if config.mode is types.CheckpointingMode.AT_LEAST_ONCE:
            return cls(AlignmentMode.TRACKING)
        if not config.unaligned:
            return cls(AlignmentMode.ALIGNED)
        if config.aligned_timeout == 0:
            return cls(AlignmentMode.UNALIGNED)
        return cls(AlignmentMode.ALTERNATING, config.aligned_timeout)

    @property
    def max_pending(self) -> int:
        """How many checkpoints may wait for barriers at once (exactly-once: one)."""
        return MAX_TRACKED_CHECKPOINTS if self.mode is AlignmentMode.TRACKING else 1

    def normalise(self, barrier: types.Barrier) -> types.Barrier:
        """Strip the unaligned flag where it cannot apply: savepoints and at-least-once."""
        if barrier.unaligned and (barrier.is_savepoint or self.mode is AlignmentMode.TRACKING):
            return dataclasses.replace(barrier, unaligned=False)
        return barrier

    def starts_unaligned(self, barrier: types.Barrier) -> bool:
        """Process this barrier unaligned from the start (savepoints never are)."""
        if barrier.is_savepoint or self.mode is AlignmentMode.TRACKING:
            return False
        return barrier.unaligned or self.mode is AlignmentMode.UNALIGNED

    def is_timed_out(self, barrier: types.Barrier, now: float) -> bool:
        """Alternating checkpoints only: alignment has exceeded ``aligned_timeout``."""
        if self.mode is not AlignmentMode.ALTERNATING or barrier.is_savepoint:
            return False
        return now - barrier.timestamp > self.aligned_timeout
