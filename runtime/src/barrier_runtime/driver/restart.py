"""Restart policies: may a failed job restart, and after how long?

The driver asks its policy once per failed attempt
(:meth:`RestartPolicy.attempt_failed`) and tells it when an attempt starts
(:meth:`RestartPolicy.attempt_started`). Time is passed in (seconds from the
driver's clock), so the policies are pure and tested with a hand-moved clock.

* :class:`FixedDelayRestartPolicy`: at most ``max_restarts`` restarts over the
  whole run, each after the same delay (the in-process executor's policy).
* :class:`ExponentialDelayRestartPolicy`: the Spark driver's policy — delays
  grow exponentially with jitter; at most ``max_restarts`` failures within any
  sliding ``window`` (a failure-rate budget); an attempt that ran stably for
  ``reset_after`` seconds resets the delay to its initial value.

>>> policy = ExponentialDelayRestartPolicy(
...     max_restarts=2, window=60, backoff=Backoff(initial=1, max=5, jitter=0), reset_after=30)
>>> policy.attempt_started(0)
>>> [policy.attempt_failed(t).delay for t in (1, 2)]
[1.0, 2.0]
>>> policy.attempt_failed(3).restart
False
"""

from __future__ import annotations

import collections
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from barrier_runtime import task_failure
from barrier_runtime.core import metadata


@dataclass(frozen=True, slots=True)
class RestartDecision:
    """Restart after ``delay`` seconds, or give up for ``reason``."""

    restart: bool
    delay: float = 0.0
    reason: str = ""

    @classmethod
    def after(cls, delay: float) -> RestartDecision:
        return cls(True, delay)

    @classmethod
    def give_up(cls, reason: str) -> RestartDecision:
        return cls(False, 0.0, reason)


class RestartPolicy(Protocol):
    def attempt_started(self, now: float) -> None:
        """An attempt of the job starts at ``now``."""
        ...

    def attempt_failed(self, now: float) -> RestartDecision:
        """The running attempt failed at ``now``: restart (after a delay) or give up."""
        ...


class FixedDelayRestartPolicy:
    """At most ``max_restarts`` restarts in total, each after ``delay`` seconds."""

    def __init__(self, max_restarts: int, delay: float = 0.0) -> None:
        if max_restarts < 0 or delay < 0:
            raise ValueError("max_restarts and delay must not be negative")
        self.max_restarts = max_restarts
        self.delay = delay
        self._restarts = 0

    def attempt_started(self, now: float) -> None:
        pass

    def attempt_failed(self, now: float) -> RestartDecision:
        if self._restarts >= self.max_restarts:
            return RestartDecision.give_up(
                f"job failed {_times(self._restarts + 1)}, more than the restart budget "
                f"of {self.max_restarts}"
            )
        self._restarts += 1
        return RestartDecision.after(self.delay)


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delays ``initial · multiplierⁿ`` capped at ``max``, ± ``jitter`` (a fraction)."""

    initial: float = 1.0
    max: float = 60.0
    multiplier: float = 2.0
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if self.initial < 0 or self.max < self.initial:
            raise ValueError(f"backoff needs 0 <= initial <= max, got {self.initial}, {self.max}")
        if self.multiplier < 1:
            raise ValueError(f"backoff multiplier must be at least 1, got {self.multiplier}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"backoff jitter must be between 0 and 1, got {self.jitter}")

    def delay(self, consecutive: int, unit_random: float) -> float:
        """The delay before the ``consecutive``-th restart (0-based); ``unit_random`` in [0, 1)."""
        base = min(self.max, self.initial * self.multiplier**consecutive)
        return max(0.0, base * (1.0 + self.jitter * (2.0 * unit_random - 1.0)))


class ExponentialDelayRestartPolicy:
    """Exponential backoff with jitter, a failure-rate budget and a reset after stable runs.

    * A failure at ``t`` counts against the budget until ``t + window``; the
      job gives up on the failure that makes more than ``max_restarts`` in the
      window.
    * ``prior_failures`` (failures of earlier drivers of the same job) count in the
      window as if they had happened here: one budget across driver restarts.
    * The *n*-th consecutive restart waits ``backoff.delay(n)``; consecutive
      means "since the last attempt that ran for at least ``reset_after``
      seconds" (a stable attempt puts the delay back to ``backoff.initial``;
      its failure still counts in the window).
    """

    def __init__(
        self,
        *,
        max_restarts: int,
        window: float,
        backoff: Backoff,
        reset_after: float,
        prior_failures: Iterable[float] = (),
        unit_random: Callable[[], float] = random.random,
    ) -> None:
        if max_restarts < 0 or window <= 0 or reset_after < 0:
            raise ValueError("need max_restarts >= 0, window > 0 and reset_after >= 0")
        self.max_restarts = max_restarts
        self.window = window
        self.backoff = backoff
        self.reset_after = reset_after
        self._random = unit_random
        self._failures: collections.deque[float] = collections.deque(sorted(prior_failures))
        self._consecutive = 0
        self._started: float | None = None

    @property
    def failures_in_window(self) -> int:
        return len(self._failures)

    def attempt_started(self, now: float) -> None:
        self._started = now

    def attempt_failed(self, now: float) -> RestartDecision:
        if self._started is not None and now - self._started >= self.reset_after:
            self._consecutive = 0
        self._started = None
        self._failures.append(now)
        while self._failures and self._failures[0] <= now - self.window:
            self._failures.popleft()
        if len(self._failures) > self.max_restarts:
            return RestartDecision.give_up(
                f"job failed {_times(len(self._failures))} within {self.window:g}s, more than "
                f"the restart budget of {self.max_restarts}"
            )
        delay = self.backoff.delay(self._consecutive, self._random())
        self._consecutive += 1
        return RestartDecision.after(delay)


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


class SameFailureLimit:
    """Gives up on failures that a restart cannot heal, before the restart budget does.

    * ``PERMANENT`` failures (an invalid pipeline, an unusable configuration):
      at once.
    * ``RECORD`` failures (the user's function raised on a record, a malformed
      record under ``on_error="fail"``): once the same fingerprint — the same
      step, error and record — failed ``attempts`` attempts. Replaying the same
      input from the same checkpoint meets the same record, so restarting again
      would only loop; a different record resets nothing, it counts on its own.
    * ``TRANSIENT`` failures are left to the restart policy.

    >>> limit = SameFailureLimit(attempts=2)
    >>> poison = task_failure.TaskFailure(task_failure.FailureClass.RECORD, "E: x", "f1")
    >>> limit.verdict(poison) is None
    True
    >>> limit.verdict(poison)
    'it failed the same way on the same record in 2 attempts'
    """

    def __init__(self, attempts: int) -> None:
        if attempts < 1:
            raise ValueError(f"attempts per record must be at least 1, got {attempts}")
        self.attempts = attempts
        self._seen: collections.Counter[str] = collections.Counter()

    def verdict(self, failure: task_failure.TaskFailure) -> str | None:
        """Why restarting cannot help after ``failure``; ``None`` when it may."""
        if failure.failure_class is task_failure.FailureClass.PERMANENT:
            return "a restart cannot change the pipeline or its configuration"
        if failure.failure_class is task_failure.FailureClass.RECORD and failure.fingerprint:
            self._seen[failure.fingerprint] += 1
            n = self._seen[failure.fingerprint]
            if n >= self.attempts:
                return f"it failed the same way on the same record in {_times_attempts(n)}"
        return None


def _times_attempts(n: int) -> str:
    return "1 attempt" if n == 1 else f"{n} attempts"


def failure_text(
    report: task_failure.TaskFailure | None, task: metadata.TaskKey | None
) -> tuple[str, str]:
    """The failure's one-line reason and where it happened.

    A failure in the user's step says the step (in its message) and the subtask;
    others name the task that failed.
    """
    if report is None:
        return "unknown failure", f" in {task}" if task else ""
    if report.step is not None:
        reason = report.summary.split(": ", 1)[-1]
        return reason, f" (subtask {task.subtask})" if task else ""
    return report.summary, f" in {task}" if task else ""
