"""How many checkpoints may be in flight at once.

Every pending checkpoint counts, savepoints included, and so does one that has
all its acknowledgements and is being committed. Savepoints themselves are
*forced* (as in Flink): they may start even when the limit is reached, because
a stop-with-savepoint must not fail just because a periodic checkpoint is
still running.

>>> limit = MaxConcurrentPolicy(max_concurrent=1)
>>> limit.allows(in_flight=0), limit.allows(in_flight=1)
(True, False)
"""

from __future__ import annotations


class MaxConcurrentPolicy:
    """Caps the number of checkpoints in flight at ``max_concurrent``."""

    def __init__(self, max_concurrent: int) -> None:
        if max_concurrent < 1:
            raise ValueError(f"max_concurrent must be at least 1, got {max_concurrent}")
        self._max_concurrent = max_concurrent

    @property
    def max_concurrent(self) -> int:
        return self._max_concurrent

    def allows(self, in_flight: int) -> bool:
        """Whether one more checkpoint may start while ``in_flight`` are pending."""
        return in_flight < self._max_concurrent
