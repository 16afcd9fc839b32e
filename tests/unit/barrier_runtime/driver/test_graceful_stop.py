"""SIGTERM → final savepoint within the grace period (barrier_runtime.driver.graceful_stop).

A recording job stands in for the JobDriver; the clock is manual, so the deadline
arithmetic is exact and nothing sleeps.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field

import pytest

from barrier_runtime.checkpoint import outcomes, stats
from barrier_runtime.control.job import SavepointFailedError
from barrier_runtime.core import types
from barrier_runtime.core.clock import ManualClock
from barrier_runtime.driver import graceful_stop
from barrier_runtime.driver.graceful_stop import GracefulStop, StopDeadline, StopState


@dataclass
class RecordingJob:
    clock: ManualClock
    starts_after: float = 0.0
    """Seconds until the job is running (the clock moves by that much while waiting)."""
    running: bool = True
    savepoint_takes: float = 1.0
    savepoint_fails: str | None = None
    calls: list[tuple[str, object]] = field(default_factory=list)

    def wait_running(self, timeout: float) -> bool:
        self.calls.append(("wait_running", timeout))
        self.clock.advance(min(self.starts_after, timeout))
        return self.running and self.starts_after <= timeout

    def stop_with_savepoint(self, timeout: float) -> outcomes.CheckpointOutcome:
        self.calls.append(("stop_with_savepoint", timeout))
        if self.savepoint_fails is not None or self.savepoint_takes > timeout:
            self.clock.advance(timeout)
            raise SavepointFailedError(self.savepoint_fails or "still in progress")
        self.clock.advance(self.savepoint_takes)
        return outcomes.CheckpointOutcome(
            types.CheckpointId(7),
            types.CheckpointKind.SAVEPOINT,
            stats.CheckpointStatus.COMPLETED,
            path="savepoints/sp-0000000007",
        )

    def abort(self, reason: str) -> None:
        self.calls.append(("abort", reason))

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


def _stop(job: RecordingJob, grace: float = 60.0) -> tuple[GracefulStop, list[int]]:
    exits: list[int] = []
    return GracefulStop(job, grace, clock=job.clock, hard_exit=exits.append), exits


def test_the_deadline_is_the_grace_period_less_the_margin() -> None:
    deadline = StopDeadline.after_signal(grace_period=30.0, now=1000.0)
    assert deadline.margin == graceful_stop.stop_margin(30.0) == 6.0
    assert deadline.at == 1024.0
    assert deadline.remaining(1010.0) == 14.0
    assert deadline.remaining(2000.0) == 0.0


def test_a_grace_period_shorter_than_the_margin_leaves_no_time() -> None:
    assert StopDeadline.after_signal(grace_period=0.5, now=10.0).remaining(10.0) == 0.0


def test_sigterm_takes_a_savepoint_with_the_time_left() -> None:
    job = RecordingJob(ManualClock(100.0), starts_after=4.0)
    stop, exits = _stop(job, grace=60.0)
    stop.handle(signal.SIGTERM)
    stop.join(10)
    assert stop.state is StopState.SAVED and stop.signal_name == "SIGTERM"
    assert stop.savepoint is not None and stop.savepoint.checkpoint_id == 7
    # 60 s grace - 10 s margin = 50 s, of which 4 s went on waiting for the job to run
    assert job.calls == [("wait_running", 50.0), ("stop_with_savepoint", 46.0)]
    assert exits == []


def test_a_savepoint_that_misses_the_deadline_is_cancelled_and_the_job_aborted() -> None:
    job = RecordingJob(ManualClock(), savepoint_takes=100.0)
    stop, _ = _stop(job, grace=30.0)
    stop.handle(signal.SIGTERM)
    stop.join(10)
    assert stop.state is StopState.FAILED
    assert job.names() == ["wait_running", "stop_with_savepoint", "abort"]
    reason = str(job.calls[-1][1])
    assert "grace period of 30s" in reason and "latest completed checkpoint" in reason
    assert stop.failure == reason


def test_a_failed_savepoint_aborts_the_job() -> None:
    job = RecordingJob(ManualClock(), savepoint_fails="a subtask declined it")
    stop, _ = _stop(job)
    stop.handle(signal.SIGINT)
    stop.join(10)
    assert stop.state is StopState.FAILED and "a subtask declined it" in str(stop.failure)
    assert job.names()[-1] == "abort"


def test_a_job_that_never_ran_is_aborted_without_a_savepoint() -> None:
    job = RecordingJob(ManualClock(), running=False)
    stop, _ = _stop(job)
    stop.handle(signal.SIGTERM)
    stop.join(10)
    assert job.names() == ["wait_running", "abort"]
    assert "not running" in str(stop.failure)


def test_a_second_signal_during_the_stop_exits_at_once() -> None:
    job = RecordingJob(ManualClock())
    stop, exits = _stop(job)
    stop.state = StopState.STOPPING  # as if a first signal's stop were under way
    stop.handle(signal.SIGINT)
    assert exits == [128 + signal.SIGINT]
    assert job.calls == []


def test_the_grace_period_must_be_positive() -> None:
    with pytest.raises(ValueError, match="grace_period"):
        GracefulStop(RecordingJob(ManualClock()), 0)


def test_signals_are_routed_only_inside_the_block() -> None:
    stop, _ = _stop(RecordingJob(ManualClock()))
    before = signal.getsignal(signal.SIGTERM)
    with graceful_stop.on_signals(stop):
        assert signal.getsignal(signal.SIGTERM) == stop.handle
        assert signal.getsignal(signal.SIGINT) == stop.handle
    assert signal.getsignal(signal.SIGTERM) == before
