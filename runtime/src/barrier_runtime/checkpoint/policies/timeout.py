"""When a pending checkpoint expires.

A checkpoint that has not collected every acknowledgement ``timeout`` seconds
after it was triggered is aborted with ``TIMEOUT``. A checkpoint that already
has every acknowledgement and is being committed is past the point of no
return and does not expire (its commit decides its fate).

>>> policy = TimeoutPolicy(timeout=60.0)
>>> policy.deadline(trigger_time=100.0)
160.0
>>> policy.is_expired(trigger_time=100.0, now=159.9), policy.is_expired(100.0, 160.0)
(False, True)
>>> policy.expiry_message(["map#0", "map#1"])
'not acknowledged within 60.0s by 2 subtask(s): map#0, map#1'
"""

from __future__ import annotations

from collections.abc import Sequence


class TimeoutPolicy:
    """Expires pending checkpoints ``timeout`` seconds after their trigger."""

    def __init__(self, timeout: float) -> None:
        if timeout <= 0:
            raise ValueError(f"checkpoint timeout must be positive, got {timeout}")
        self._timeout = timeout

    @property
    def timeout(self) -> float:
        return self._timeout

    def deadline(self, trigger_time: float) -> float:
        return trigger_time + self._timeout

    def is_expired(self, trigger_time: float, now: float) -> bool:
        return now >= self.deadline(trigger_time)

    def expiry_message(self, missing: Sequence[object]) -> str:
        """Why a checkpoint expired, naming (up to five of) the subtasks it waited for."""
        shown = ", ".join(map(str, missing[:5])) + (" ..." if len(missing) > 5 else "")
        return f"not acknowledged within {self._timeout}s by {len(missing)} subtask(s): {shown}"
