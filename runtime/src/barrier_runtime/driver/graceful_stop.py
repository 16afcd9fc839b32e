"""Stop on SIGTERM (or SIGINT) with a final savepoint, within the pod's grace period.

Kubernetes stops a pod (``kubectl delete pod``, eviction, node drain) by sending
SIGTERM and, ``terminationGracePeriodSeconds`` later, SIGKILL. The driver uses
that time the way ``POST /v1/stop {"savepoint": true}`` does
(:meth:`~barrier_runtime.driver.job_driver.JobDriver.stop_with_savepoint`):

1. The first signal starts the stop on a thread of its own (a signal handler
   must not block the restart loop it interrupts) and fixes the deadline:
   signal time + grace period - a margin (:class:`StopDeadline`), the margin
   leaving room to shut Spark down and exit before SIGKILL.
2. The stop waits for the job to be running, then takes the savepoint with
   whatever time is left. Done: the run loop ends as "stopped", the driver
   reports the savepoint and exits 0; the next start restores from it (it is
   the newest snapshot: checkpoints and savepoints share one id sequence, and
   restore picks the newest usable one of either kind).
3. Not done by the deadline (or the job never ran): the savepoint is
   cancelled and the run loop raises
   :class:`~barrier_runtime.driver.job_driver.JobAbortedError` with a clear
   message, so the driver exits non-zero; the latest completed checkpoint
   stays the restore point.
4. A second signal during the stop aborts at once (``hard_exit``, exit code
   128 + signal number), as an impatient Ctrl-C expects.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from barrier_runtime import job_document
from barrier_runtime.checkpoint import outcomes
from barrier_runtime.control import job
from barrier_runtime.core.clock import Clock, SystemClock

log = logging.getLogger(__name__)

DEFAULT_GRACE_PERIOD = job_document.DEFAULT_GRACE_PERIOD
"""The CRD's ``terminationGracePeriodSeconds`` default (Kubernetes' own is 30)."""
SIGNALS = (signal.SIGTERM, signal.SIGINT)


def stop_margin(grace_period: float) -> float:
    """Time kept back from the grace period to shut Spark down and exit: a fifth of it,
    at least 1 s and at most 10 s.

    >>> [stop_margin(g) for g in (3, 30, 60, 600)]
    [1.0, 6.0, 10.0, 10.0]
    """
    return min(10.0, max(1.0, grace_period / 5))


@dataclass(frozen=True, slots=True)
class StopDeadline:
    """When a stop that began at ``received_at`` must have its savepoint.

    >>> d = StopDeadline.after_signal(grace_period=60, now=100.0)
    >>> d.at, d.remaining(now=120.0), d.remaining(now=200.0)
    (150.0, 30.0, 0.0)
    """

    received_at: float
    grace_period: float
    margin: float

    @classmethod
    def after_signal(cls, grace_period: float, now: float) -> StopDeadline:
        return cls(now, grace_period, stop_margin(grace_period))

    @property
    def at(self) -> float:
        return self.received_at + max(self.grace_period - self.margin, 0.0)

    def remaining(self, now: float) -> float:
        return max(self.at - now, 0.0)


class StoppableJob(Protocol):
    """What a graceful stop needs of the job (:class:`~.job_driver.JobDriver` has it)."""

    def wait_running(self, timeout: float) -> bool: ...
    def stop_with_savepoint(self, timeout: float) -> outcomes.CheckpointOutcome: ...
    def abort(self, reason: str) -> None: ...


class StopState(enum.Enum):
    IDLE = "idle"
    STOPPING = "stopping"
    SAVED = "saved"
    FAILED = "failed"


class GracefulStop:
    """Turns the first stop signal into a stop-with-savepoint and a second one into an exit."""

    def __init__(
        self,
        job_: StoppableJob,
        grace_period: float = DEFAULT_GRACE_PERIOD,
        *,
        clock: Clock | None = None,
        hard_exit: Callable[[int], None] = os._exit,
    ) -> None:
        if grace_period <= 0:
            raise ValueError(f"grace_period must be positive, got {grace_period}")
        self._job = job_
        self.grace_period = grace_period
        self._clock = clock or SystemClock()
        self._hard_exit = hard_exit
        self._lock = threading.Lock()
        self.state = StopState.IDLE
        self.signal_name: str | None = None
        self.savepoint: outcomes.CheckpointOutcome | None = None
        self.failure: str | None = None
        self._thread: threading.Thread | None = None

    def handle(self, signum: int, _frame: object = None) -> None:
        """The signal handler: start the stop, or abort if one is under way."""
        name = signal.Signals(signum).name
        with self._lock:
            first = self.state is StopState.IDLE
            if first:
                self.state = StopState.STOPPING
                self.signal_name = name
        if not first:
            log.warning("%s during the stop: aborting now, without a savepoint", name)
            sys.stderr.flush()
            self._hard_exit(128 + signum)
            return
        deadline = StopDeadline.after_signal(self.grace_period, self._clock.now())
        log.warning(
            "%s: stopping with a final savepoint (grace period %gs, deadline in %.0fs; "
            "send it again to abort)",
            name,
            self.grace_period,
            deadline.remaining(deadline.received_at),
        )
        self._thread = threading.Thread(
            target=self.stop, args=(deadline,), name="graceful-stop", daemon=True
        )
        self._thread.start()

    def stop(self, deadline: StopDeadline) -> None:
        """Steps 2 and 3 of the module docstring (runs on the stop thread)."""
        try:
            if not self._job.wait_running(deadline.remaining(self._clock.now())):
                raise job.SavepointFailedError("the job was not running yet")
            done = self._job.stop_with_savepoint(deadline.remaining(self._clock.now()))
        except job.SavepointFailedError as exc:
            self.failure = (
                f"{self.signal_name}: no final savepoint within the grace period of "
                f"{self.grace_period:g}s ({exc}); it was cancelled and the next start restores "
                "the latest completed checkpoint"
            )
            self.state = StopState.FAILED
            log.error("%s", self.failure)
            self._job.abort(self.failure)
            return
        self.savepoint = done
        self.state = StopState.SAVED
        log.warning(
            "%s: final savepoint %s completed at %s; the next start restores from it",
            self.signal_name,
            done.checkpoint_id,
            done.path,
        )

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)


@contextlib.contextmanager
def on_signals(stop: GracefulStop) -> Iterator[GracefulStop]:
    """Route SIGTERM and SIGINT to ``stop`` while the block runs (main thread only)."""
    previous = {sig: signal.signal(sig, stop.handle) for sig in SIGNALS}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
