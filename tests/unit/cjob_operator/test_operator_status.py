"""The next status: conditions, checkpoint health, merge patches that skip no-ops."""

from __future__ import annotations

import dataclasses
from typing import Any

from cjob_operator import status as status_mod
from cjob_operator.model import outcome as outcome_mod
from cjob_operator.model import spec, status
from cjob_operator.model.action import Action
from cjob_operator.model.enums import DriverState, Phase
from cjob_operator.model.observation import (
    CheckpointInfo,
    ControlView,
    DriverView,
    FailedInfo,
    Observation,
    StoreView,
)
from cjob_operator.model.reasons import Reason

NOW = 10_000.0


def obs(
    control: ControlView | None,
    started: float = NOW - 100,
    st: status.JobStatus | None = None,
    **spec_raw: Any,
) -> Observation:
    return Observation(
        namespace="ns",
        name="j",
        uid="u",
        generation=4,
        deleting=False,
        spec=spec.JobSpec.from_storage({"checkpointing": {"interval": "10s"}, **spec_raw}),
        spec_error=None,
        status=st or status.JobStatus(phase=Phase.RUNNING),
        driver=DriverView(DriverState.RUNNING, "j-driver", "d", started),
        control=control,
        store=StoreView.empty(),
        now=NOW,
    )


def conditions(st: status.JobStatus) -> dict[str, status.Condition]:
    return {c.type: c for c in st.conditions}


def test_running_with_fresh_checkpoints_is_ready_and_healthy() -> None:
    control = ControlView(
        True,
        True,
        "RUNNING",
        latest_completed=CheckpointInfo(3, time=NOW - 5, duration_seconds=0.4),
    )
    new = status_mod.next_status(obs(control), Action.nothing(Phase.RUNNING), outcome_mod.Outcome())
    cond = conditions(new)
    assert cond["Ready"].status == "True"
    assert cond["CheckpointHealthy"].status == "True"
    assert cond["Progressing"].status == "False"
    assert cond["Ready"].observed_generation == 4
    assert new.checkpoints.last_completed is not None
    assert new.checkpoints.last_completed.id == 3
    assert new.job_state == "RUNNING" and new.observed_generation == 4


def test_stale_checkpoints_turn_health_false() -> None:
    control = ControlView(True, True, latest_completed=CheckpointInfo(3, time=NOW - 31))
    new = status_mod.next_status(obs(control), Action.nothing(Phase.RUNNING), outcome_mod.Outcome())
    health = conditions(new)["CheckpointHealthy"]
    assert health.status == "False" and health.reason == "CheckpointsStale"


def test_young_job_without_checkpoints_is_not_stale_yet() -> None:
    control = ControlView(True, True)
    new = status_mod.next_status(
        obs(control, started=NOW - 20), Action.nothing(Phase.RUNNING), outcome_mod.Outcome()
    )
    assert conditions(new)["CheckpointHealthy"].status == "True"


def test_too_many_failures_turn_health_false() -> None:
    control = ControlView(
        True,
        True,
        latest_completed=CheckpointInfo(3, time=NOW - 1),
        latest_failed=FailedInfo(5, "timeout", NOW - 2),
        consecutive_failures=4,
    )
    new = status_mod.next_status(
        obs(control, checkpointing={"interval": "10s", "tolerableFailures": 3}),
        Action.nothing(Phase.RUNNING),
        outcome_mod.Outcome(),
    )
    health = conditions(new)["CheckpointHealthy"]
    assert health.status == "False" and health.reason == "TooManyFailures"
    assert new.checkpoints.last_failed == status.FailedCheckpoint(5, "timeout", NOW - 2)


def test_transition_time_is_kept_while_a_condition_holds() -> None:
    control = ControlView(True, True, latest_completed=CheckpointInfo(3, time=NOW - 1))
    first = status_mod.next_status(
        obs(control), Action.nothing(Phase.RUNNING), outcome_mod.Outcome()
    )
    later = obs(control, st=first)
    later = Observation(
        **{**{f: getattr(later, f) for f in later.__dataclass_fields__}, "now": NOW + 50}
    )
    second = status_mod.next_status(later, Action.nothing(Phase.RUNNING), outcome_mod.Outcome())
    assert conditions(second)["Ready"].last_transition_time == NOW


def test_unchanged_status_needs_no_patch() -> None:
    control = ControlView(True, True, latest_completed=CheckpointInfo(3, time=NOW - 1))
    new = status_mod.next_status(obs(control), Action.nothing(Phase.RUNNING), outcome_mod.Outcome())
    stored = status_mod.storable(new)
    assert status_mod.merge_patch(stored, stored) == {}
    again = status_mod.next_status(
        obs(control, st=new), Action.nothing(Phase.RUNNING), outcome_mod.Outcome()
    )
    assert status_mod.merge_patch(stored, status_mod.storable(again)) == {}


def test_merge_patch_removes_what_disappeared() -> None:
    old = {"intent": {"op": "stop", "done": True, "savepointPath": "x"}, "phase": "Suspending"}
    new = {"intent": {"op": "deploy", "id": "d"}, "phase": "Upgrading"}
    assert status_mod.merge_patch(old, new) == {
        "intent": {"op": "deploy", "id": "d", "done": None, "savepointPath": None},
        "phase": "Upgrading",
    }


def test_a_failed_job_says_why_in_error_and_in_the_ready_condition() -> None:
    why = (
        "the driver pod j-driver failed: cjob: job failed: malformed record in a.jsonl "
        "line 3: not valid JSON (Error, exit code 1); not restarting"
    )
    first = status_mod.next_status(
        obs(None), Action.fail(Reason.JOB_FAILED, why), outcome_mod.Outcome()
    )
    assert first.error == why
    ready = conditions(first)["Ready"]
    assert (ready.status, ready.reason, ready.message) == ("False", "JobFailed", why)
    later = status_mod.next_status(
        obs(None, st=first), Action.nothing(Phase.FAILED), outcome_mod.Outcome()
    )
    assert conditions(later)["Ready"] == ready  # stays put on every later reconcile


def _exited(state: DriverState, job_state: str | None, pod: str | None = "j-driver") -> Observation:
    base = obs(None, st=status.JobStatus(phase=Phase.RUNNING, job_state=job_state))
    return dataclasses.replace(base, driver=DriverView(state, pod, "d", NOW - 100))


def test_job_state_follows_the_drivers_exit_once_its_control_api_is_gone() -> None:
    table = [
        (DriverState.FAILED, "RESTARTING", "FAILED"),
        (DriverState.FAILED, "RUNNING", "FAILED"),
        (DriverState.SUCCEEDED, "STOPPING", "STOPPED"),
        (DriverState.SUCCEEDED, "RUNNING", "FINISHED"),
        (DriverState.SUCCEEDED, "STOPPED", "STOPPED"),  # what the driver said last, settled
        (DriverState.PENDING, "RESTARTING", "RESTARTING"),  # still starting: as last reported
        (DriverState.RUNNING, "RUNNING", "RUNNING"),  # control API not answering right now
    ]
    got = [(d, before, status_mod.job_state(_exited(d, before))) for d, before, _ in table]

    assert got == table
    assert status_mod.job_state(_exited(DriverState.ABSENT, "RESTARTING", pod=None)) is None


def test_a_problem_that_keeps_the_job_from_running_is_in_ready_with_its_reason() -> None:
    why = "cannot read the checkpoint store to choose a restore point: cannot reach S3 at x"
    deploying = obs(None, st=status.JobStatus(phase=Phase.DEPLOYING))
    wait = Action.wait(Phase.DEPLOYING, Reason.STORAGE_UNAVAILABLE, why, warning=True)

    first = status_mod.next_status(deploying, wait, outcome_mod.Outcome())

    ready = conditions(first)["Ready"]
    assert (first.phase, first.error) == (Phase.DEPLOYING, why)
    assert (ready.status, ready.reason, ready.message) == ("False", "StorageUnavailable", why)
    healed = status_mod.next_status(
        obs(None, st=first),
        Action.wait(Phase.DEPLOYING, Reason.DRIVER_STARTING, "waiting for the driver"),
        outcome_mod.Outcome(),
    )
    assert (conditions(healed)["Ready"].reason, healed.error) == ("Deploying", None)
