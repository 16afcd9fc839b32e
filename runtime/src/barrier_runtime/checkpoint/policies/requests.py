"""One decision per trigger request, combining pacing, min pause and concurrency.

The order of the checks follows Flink's ``CheckpointRequestDecider``:

1. Savepoints are *forced*: they ignore ``max_concurrent`` and ``min_pause``.
2. ``max_concurrent``: a manual checkpoint is refused with ``TOO_MANY_PENDING``;
   a periodic one waits (it starts on a later tick, once a slot is free).
3. ``min_pause``: a manual checkpoint is refused with ``MIN_PAUSE``; a
   periodic one waits. (Flink lets manual checkpoints skip the pause; here the
   operator triggers its periodic checkpoints through the control API, so they
   must respect it.)
4. Periodic requests also wait until ``interval`` has passed since the last
   triggered checkpoint.

>>> decider = TriggerRequestDecider(types.CheckpointConfig(interval=10.0, max_concurrent=1))
>>> decider.start(now=0.0)
>>> decider.decide_periodic(now=5.0, in_flight=0).verdict
<Verdict.WAIT: 'wait'>
>>> decider.decide_periodic(now=10.0, in_flight=0).verdict
<Verdict.GO: 'go'>
>>> decider.decide_manual(types.CheckpointKind.CHECKPOINT, now=10.0, in_flight=1).reason
<FailureReason.TOO_MANY_PENDING: 'too-many-pending'>
>>> decider.decide_manual(types.CheckpointKind.SAVEPOINT, now=10.0, in_flight=1).verdict
<Verdict.GO: 'go'>
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from barrier_runtime.checkpoint.policies import concurrency, min_pause, periodic
from barrier_runtime.core import types


class Verdict(enum.Enum):
    GO = "go"
    """Trigger now."""
    WAIT = "wait"
    """Not now; a periodic request is simply tried again on a later tick."""
    REJECT = "reject"
    """Refused; a manual request is answered with the reason."""


@dataclass(frozen=True, slots=True)
class TriggerDecision:
    """What to do with one trigger request."""

    verdict: Verdict
    reason: types.FailureReason | None = None
    message: str = ""

    @classmethod
    def go(cls) -> TriggerDecision:
        return cls(Verdict.GO)

    @classmethod
    def wait(cls, message: str) -> TriggerDecision:
        return cls(Verdict.WAIT, message=message)

    @classmethod
    def reject(cls, reason: types.FailureReason, message: str) -> TriggerDecision:
        return cls(Verdict.REJECT, reason=reason, message=message)


class TriggerRequestDecider:
    """Decides periodic and manual trigger requests from the pacing policies."""

    def __init__(self, config: types.CheckpointConfig) -> None:
        self._periodic = periodic.PeriodicTriggerPolicy(config.interval)
        self._min_pause = min_pause.MinPausePolicy(config.min_pause)
        self._concurrency = concurrency.MaxConcurrentPolicy(config.max_concurrent)

    @property
    def next_periodic_due(self) -> float:
        return self._periodic.next_due

    def start(self, now: float) -> None:
        """(Re)start periodic checkpointing: the first one is due one interval from now."""
        self._periodic.start(now)

    def checkpoint_triggered(self, kind: types.CheckpointKind, now: float) -> None:
        if kind is types.CheckpointKind.CHECKPOINT:
            self._periodic.checkpoint_triggered(now)

    def checkpoint_completed(self, now: float) -> None:
        self._min_pause.checkpoint_completed(now)

    def decide_periodic(self, now: float, in_flight: int) -> TriggerDecision:
        if not self._periodic.is_due(now):
            return TriggerDecision.wait(f"next periodic checkpoint due at {self.next_periodic_due}")
        if not self._concurrency.allows(in_flight):
            return TriggerDecision.wait(f"{in_flight} checkpoints in flight")
        if not self._min_pause.allows(now):
            return TriggerDecision.wait(f"min pause: {self._min_pause.remaining(now):.3f}s left")
        return TriggerDecision.go()

    def decide_manual(
        self, kind: types.CheckpointKind, now: float, in_flight: int
    ) -> TriggerDecision:
        if kind is types.CheckpointKind.SAVEPOINT:
            return TriggerDecision.go()
        if not self._concurrency.allows(in_flight):
            return TriggerDecision.reject(
                types.FailureReason.TOO_MANY_PENDING,
                f"{in_flight} checkpoints are already in flight "
                f"(max_concurrent={self._concurrency.max_concurrent}); try again later",
            )
        remaining = self._min_pause.remaining(now)
        if remaining > 0:
            return TriggerDecision.reject(
                types.FailureReason.MIN_PAUSE,
                f"the last checkpoint completed less than min_pause="
                f"{self._min_pause.min_pause}s ago; try again in {remaining:.3f}s",
            )
        return TriggerDecision.go()
