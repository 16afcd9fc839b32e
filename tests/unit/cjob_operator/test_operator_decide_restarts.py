"""decide() on restarts: the policy, its backoff and budget, and the driver's exit code."""

from __future__ import annotations

import pytest
from cjob_operator_testing.observations import (
    NOW,
    failed_driver,
    observe,
    raw_spec,
    running_status,
)

from cjob_operator import manifests
from cjob_operator.decide import backoff_delay, decide
from cjob_operator.model import spec, status
from cjob_operator.model.action import ActionKind
from cjob_operator.model.enums import DriverState, Phase
from cjob_operator.model.observation import (
    ControlView,
    DriverView,
)

# -- restart policy --------------------------------------------------------------------


def test_backoff_grows_exponentially_and_is_capped() -> None:
    policy = spec.RestartPolicySpec.from_storage(
        {"backoff": {"initial": "1s", "max": "5s", "multiplier": 3, "jitter": 0.5}}
    )
    assert backoff_delay(policy, 1, 0.5) == 1.0
    assert backoff_delay(policy, 2, 0.5) == 3.0
    assert backoff_delay(policy, 3, 0.5) == 5.0
    assert backoff_delay(policy, 1, 0.0) == 0.5
    assert backoff_delay(policy, 1, 0.999) == pytest.approx(1.5, abs=0.01)


def test_restart_limit_within_window_fails_the_job() -> None:
    recent = (NOW - 300, NOW - 200, NOW - 100)
    st = running_status(restarts=status.RestartsStatus(count=7, recent=recent))
    action = decide(observe(st=st, driver=failed_driver(), control=None))
    assert action.kind is ActionKind.FAIL and action.reason == "RestartLimitReached"
    assert "restartNonce" in action.message


def test_restarts_outside_the_window_do_not_count() -> None:
    recent = (NOW - 7200, NOW - 7100, NOW - 7000)
    st = running_status(restarts=status.RestartsStatus(count=3, recent=recent))
    action = decide(observe(st=st, driver=failed_driver(), control=None))
    assert action.kind is ActionKind.SCHEDULE
    assert action.restarts is not None and action.restarts.count == 4
    assert action.restarts.recent == (NOW,)


def test_second_restart_backs_off_longer() -> None:
    st = running_status(restarts=status.RestartsStatus(count=1, recent=(NOW - 30,)))
    action = decide(
        observe(
            st=st,
            driver=DriverView(DriverState.FAILED, "job-driver", "d-2", NOW - 20),
            control=None,
        )
    )
    assert action.intent is not None and action.intent.not_before == NOW + 20.0


def test_restart_policy_never_fails_on_driver_failure() -> None:
    never = raw_spec(restartPolicy={"type": "Never"})
    action = decide(
        observe(
            spec_raw=never,
            st=running_status(last_reconciled_spec=never),
            driver=failed_driver(),
            control=None,
        )
    )
    assert action.kind is ActionKind.FAIL and action.reason == "DriverFailed"


def test_failed_job_stays_failed_until_restart_nonce() -> None:
    st = running_status(phase=Phase.FAILED)
    assert decide(observe(st=st, driver=failed_driver(), control=None)).kind is ActionKind.NOTHING
    action = decide(
        observe(spec_raw=raw_spec(restartNonce="1"), st=st, driver=failed_driver(), control=None)
    )
    assert action.kind is ActionKind.SCHEDULE and action.intent is not None
    assert action.intent.reason == "RestartRequested"
    assert action.restarts is not None and action.restarts.recent == ()


# -- the driver's exit code: may a restart help? ------------------------------------


@pytest.mark.parametrize(("code", "reason"), [(1, "JobFailed"), (2, "InvalidJob")])
def test_a_driver_that_failed_for_good_is_not_restarted(code: int, reason: str) -> None:
    said = (
        "cjob: job failed: step 'parse' raised ZeroDivisionError: division by zero on "
        "record {'n': 4} (subtask 0); it failed the same way on the same record in 3 "
        f"attempts (Error, exit code {code})"
    )
    action = decide(observe(driver=failed_driver(code, said), control=None))
    assert action.kind is ActionKind.FAIL and action.phase is Phase.FAILED
    assert action.reason == reason and action.intent is None
    assert "step 'parse' raised ZeroDivisionError" in action.message
    assert "not restarting" in action.message and "spec.restartNonce" in action.message


@pytest.mark.parametrize("code", [70, 75, 130, 137, 143])
def test_a_driver_that_may_heal_is_restarted(code: int) -> None:
    action = decide(observe(driver=failed_driver(code, f"Error (exit code {code})"), control=None))
    assert action.kind is ActionKind.SCHEDULE and action.phase is Phase.RESTARTING


def _restarting_driver_control(*failure_times: float) -> ControlView:
    return ControlView(
        reachable=True,
        ready=True,
        job_state="running",
        failure_times=failure_times,
        last_failure="attempt 0 (subtask 1): WorkerLostError: worker 1 lost",
    )


def test_restarts_inside_the_driver_count_in_the_restarts_column_once() -> None:
    first, second = NOW - 30.1234567, NOW - 5.9876543  # finer than status keeps
    action = decide(observe(control=_restarting_driver_control(first, second)))
    assert action.restarts is not None
    assert (action.restarts.count, action.restarts.recent) == (2, (first, second))
    assert action.reason == "JobRestarted" and action.event
    assert "after: attempt 0 (subtask 1): WorkerLostError" in action.message
    stored = status.JobStatus.from_storage(  # as the next reconcile reads it back
        running_status().evolve(restarts=action.restarts).for_storage()
    )
    again = decide(observe(st=stored, control=_restarting_driver_control(first, second)))
    assert again.restarts is None  # already counted: the next reconcile adds nothing
    third = NOW - 1.0
    later = decide(observe(st=stored, control=_restarting_driver_control(first, second, third)))
    assert later.restarts is not None and later.restarts.count == 3


def test_the_new_driver_gets_the_windows_restarts_to_spend_one_budget() -> None:
    doc = manifests.job_document(
        manifests.JobRef("ns", "job", "uid-1"),
        spec.JobSpec.from_storage(raw_spec()),
        "d-2",
        prior_failures=(NOW - 30, NOW - 5),
    )
    assert doc.restart_policy.prior_failures == (NOW - 30, NOW - 5)
    assert doc.restart_policy.attempts_per_record == 3
