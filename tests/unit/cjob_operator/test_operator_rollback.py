"""The last stable spec and rollbacks (``spec.rollback``): bookkeeping and decisions."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import pytest

from cjob_operator import ledger
from cjob_operator import status as status_mod
from cjob_operator.decide import decide, rollback
from cjob_operator.model import intent, spec, status
from cjob_operator.model.action import Action, ActionKind
from cjob_operator.model.enums import DriverState, Phase, RolloutState
from cjob_operator.model.observation import (
    CheckpointInfo,
    ControlView,
    DriverView,
    Observation,
    StoreView,
)
from cjob_operator.model.outcome import Outcome
from cjob_operator.model.reasons import Reason

NOW = 1_700_000_000.0
CHK = CheckpointInfo(42, path="file:///s/ckpt/ns/job/checkpoints/chk-0000000042", time=NOW - 100)
STORE = StoreView(readable=True, latest_checkpoint=CHK)


def raw_spec(image: str = "jobs:1", enabled: bool = True, **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "image": image,
        "pipeline": {"module": "jobs.wordcount"},
        "checkpointing": {"interval": "30s"},
        "storage": {"endpoint": "file:///s", "bucket": "ckpt"},
        "restartPolicy": {
            "type": "Always",
            "maxRestarts": 3,
            "backoff": {"initial": "10s", "jitter": 0.0},
        },
        "rollback": {"enabled": enabled, "timeout": "5m"},
    }
    return {**base, **overrides}


S1, S2 = raw_spec("jobs:1"), raw_spec("jobs:2")


def verifying(since: float, **changes: Any) -> status.JobStatus:
    """Upgraded to S2 at ``since``; S1 was stable."""
    return status.JobStatus(
        phase=Phase.RUNNING,
        observed_generation=2,
        last_reconciled_spec=S2,
        last_stable_spec=S1,
        rollout=status.RolloutStatus(RolloutState.VERIFYING, since),
    ).evolve(**changes)


def running_driver(started: float = NOW - 1000) -> DriverView:
    return DriverView(DriverState.RUNNING, "job-driver", "d-1", started)


def observe(
    spec_raw: dict[str, Any] | None = None,
    st: status.JobStatus | None = None,
    driver: DriverView | None = None,
    control: ControlView | None = None,
    store: StoreView | None = STORE,
    now: float = NOW,
) -> Observation:
    return Observation(
        namespace="ns",
        name="job",
        uid="u",
        generation=2,
        deleting=False,
        spec=spec.JobSpec.from_storage(S2 if spec_raw is None else spec_raw),
        spec_error=None,
        status=verifying(NOW - 60) if st is None else st,
        driver=running_driver() if driver is None else driver,
        control=ControlView(reachable=True, ready=True) if control is None else control,
        store=store,
        now=now,
    )


# -- Verifying, then Stable ---------------------------------------------------------------


def test_an_upgrade_is_verifying_from_the_moment_it_is_written_ahead() -> None:
    st = status.JobStatus(
        phase=Phase.RUNNING,
        last_reconciled_spec=S1,
        last_stable_spec=S1,
        rollout=status.RolloutStatus(RolloutState.STABLE, NOW - 900),
    )
    obs = observe(S2, st)
    action = decide(obs)
    assert action.kind is ActionKind.SCHEDULE and action.intent is not None
    ahead = status_mod.write_ahead(obs, action)
    assert ahead is not None and ahead.rollout is not None
    assert (ahead.rollout.state, ahead.rollout.since) == (RolloutState.VERIFYING, NOW)
    assert ahead.last_stable_spec == S1


def test_an_operator_only_change_does_not_need_verifying() -> None:
    st = status.JobStatus(
        phase=Phase.RUNNING,
        last_reconciled_spec=S1,
        last_stable_spec=S1,
        rollout=status.RolloutStatus(RolloutState.STABLE, NOW - 900),
    )
    changed = {**S1, "restartPolicy": {"maxRestarts": 7}, "savepoints": {"interval": "1h"}}
    obs = observe(changed, st, control=ControlView(True, True, latest_completed=CHK))
    new = status_mod.next_status(obs, decide(obs), Outcome())
    assert new.rollout == st.rollout and new.last_reconciled_spec == changed


def fresh_checkpoint(at: float) -> ControlView:
    return ControlView(reachable=True, ready=True, latest_completed=CheckpointInfo(50, time=at))


@pytest.mark.parametrize(
    ("situation", "stable"),
    [
        ("healthy, a checkpoint after the start", True),
        ("only checkpoints from before the start", False),
        ("an intent pending", False),
        ("not running", False),
        ("too many checkpoint failures", False),
    ],
)
def test_a_spec_becomes_stable_once_it_runs_with_a_completed_checkpoint(
    situation: str, stable: bool
) -> None:
    started = NOW - 50
    control = fresh_checkpoint(NOW - 5)
    st = verifying(NOW - 60)
    action = Action.nothing(Phase.RUNNING)
    if situation.startswith("only"):
        control = fresh_checkpoint(NOW - 55)
    if situation == "an intent pending":
        st = st.evolve(
            intent=intent.Intent.deploy(
                "r-1", Reason.DRIVER_FAILED, NOW, intent.RestoreTarget.latest()
            )
        )
    if situation == "not running":
        action = Action.wait(Phase.RESTARTING, Reason.BACKING_OFF, "backing off")
    if situation.startswith("too many"):
        control = replace(control, consecutive_failures=9)
    obs = observe(S2, st, driver=running_driver(started), control=control)
    new = status_mod.next_status(obs, action, Outcome())
    assert new.rollout is not None
    if stable:
        assert new.rollout.state is RolloutState.STABLE and new.last_stable_spec == S2
        assert "SpecStable" in [reason for _, reason, _ in ledger.events(obs.status, new)]
    else:
        assert new.rollout.state is RolloutState.VERIFYING and new.last_stable_spec == S1


def test_a_status_written_before_rollouts_existed_becomes_stable() -> None:
    legacy = status.JobStatus(phase=Phase.RUNNING, last_reconciled_spec=S1)
    obs = observe(S1, legacy, driver=running_driver(NOW - 50), control=fresh_checkpoint(NOW - 5))
    new = status_mod.next_status(obs, Action.nothing(Phase.RUNNING), Outcome())
    assert new.rollout is not None and new.rollout.state is RolloutState.STABLE
    assert new.last_stable_spec == S1


# -- rolling back ---------------------------------------------------------------------------


def test_an_upgrade_that_never_proves_itself_is_rolled_back_from_the_latest_checkpoint() -> None:
    young = decide(observe(st=verifying(NOW - 299)))
    assert young.reason != rollback.REASON
    obs = observe(st=verifying(NOW - 300))
    action = decide(obs)
    assert action.kind is ActionKind.SCHEDULE and action.reason == "RolledBack"
    assert action.warning and action.phase is Phase.UPGRADING
    assert action.intent is not None and action.intent.restore == intent.RestoreTarget.latest()
    assert action.rollout is not None and action.rollout.state is RolloutState.ROLLED_BACK
    assert "image" in action.message and "5m" in action.message
    ahead = status_mod.write_ahead(obs, action)
    assert ahead is not None and ahead.rollout == action.rollout
    assert ahead.last_reconciled_spec == S2  # the user's spec, so it is not upgraded to again

    # the S2 driver goes, then the last stable spec is deployed from checkpoint 42
    gone = observe(st=ahead, driver=DriverView.absent(), control=ControlView(False), now=NOW + 5)
    deploy = decide(gone)
    assert deploy.kind is ActionKind.DEPLOY and deploy.spec is not None
    assert deploy.spec.image == "jobs:1" and deploy.restore is not None
    assert deploy.restore.arg == "42" and "rolled back" in deploy.message

    # running the stable spec: no new upgrade, no stable marking of S2
    settled = ahead.evolve(intent=None, phase=Phase.RUNNING)
    calm = observe(
        st=settled,
        driver=running_driver(NOW + 10),
        control=fresh_checkpoint(NOW + 20),
        now=NOW + 30,
    )
    action = decide(calm)
    assert action.kind is ActionKind.NOTHING
    new = status_mod.next_status(calm, action, Outcome())
    assert new.rollout == ahead.rollout and new.last_stable_spec == S1


def test_while_rolled_back_restarts_also_deploy_the_stable_spec() -> None:
    rolled = verifying(NOW - 900, rollout=status.RolloutStatus(RolloutState.ROLLED_BACK, NOW - 600))
    failed = DriverView(
        DriverState.FAILED, "job-driver", "d-2", NOW - 300, "OOMKilled (exit code 137)", 137
    )
    restart = decide(observe(st=rolled, driver=failed, control=ControlView(False)))
    assert restart.kind is ActionKind.SCHEDULE and restart.intent is not None
    st = rolled.evolve(intent=restart.intent, restarts=restart.restarts)
    deploy = decide(
        observe(st=st, driver=DriverView.absent(), control=ControlView(False), now=NOW + 60)
    )
    assert deploy.kind is ActionKind.DEPLOY and deploy.spec is not None
    assert deploy.spec.image == "jobs:1"


def test_a_new_spec_change_after_a_rollback_is_deployed_and_verified_again() -> None:
    rolled = verifying(NOW - 900, rollout=status.RolloutStatus(RolloutState.ROLLED_BACK, NOW - 600))
    s3 = raw_spec("jobs:3")
    obs = observe(s3, rolled)
    action = decide(obs)
    assert action.kind is ActionKind.SCHEDULE and action.intent is not None
    assert action.reason == "Upgrade"
    ahead = status_mod.write_ahead(obs, action)
    assert ahead is not None and ahead.rollout is not None
    assert ahead.rollout.state is RolloutState.VERIFYING
    deploy = decide(
        observe(s3, ahead, driver=DriverView.absent(), control=ControlView(False), now=NOW + 1)
    )
    assert deploy.kind is ActionKind.DEPLOY and deploy.spec is None  # the current spec


def test_a_rollback_replaces_a_restart_that_is_backing_off() -> None:
    backing_off = intent.Intent.deploy(
        "r-1", Reason.DRIVER_FAILED, NOW - 5, intent.RestoreTarget.latest(), not_before=NOW + 200
    )
    st = verifying(NOW - 400, intent=backing_off, phase=Phase.RESTARTING)
    action = decide(observe(st=st, driver=DriverView.absent(), control=ControlView(False)))
    assert action.reason == "RolledBack"
    assert action.intent is not None and action.intent.not_before is None
    assert action.restarts is not None and action.restarts.recent == ()


def test_a_failed_upgrade_is_rolled_back_too() -> None:
    st = verifying(NOW - 400, phase=Phase.FAILED)
    action = decide(observe(st=st, driver=DriverView.absent(), control=ControlView(False)))
    assert action.reason == "RolledBack"


def test_no_rollback_while_a_final_savepoint_is_taken_or_when_suspended() -> None:
    stopping = intent.Intent.stop("s-1", Reason.UPGRADE, NOW - 10, intent.StopPurpose.UPGRADE)
    assert decide(observe(st=verifying(NOW - 400, intent=stopping))).reason != "RolledBack"
    suspended = {**S2, "state": "Suspended"}
    assert (
        decide(observe(suspended, verifying(NOW - 400, last_reconciled_spec=suspended))).reason
        != "RolledBack"
    )


@pytest.mark.parametrize(
    ("why", "st", "spec_raw"),
    [
        ("no stable spec to roll back to", verifying(NOW - 400, last_stable_spec=None), S2),
        ("nothing to roll back to", verifying(NOW - 400, last_stable_spec=S2), S2),
        (
            "spec.storage changed",
            verifying(
                NOW - 400,
                last_reconciled_spec={
                    **S2,
                    "storage": {"endpoint": "file:///t", "bucket": "other"},
                },
            ),
            {**S2, "storage": {"endpoint": "file:///t", "bucket": "other"}},
        ),
    ],
)
def test_when_no_rollback_is_possible_it_says_so_once(
    why: str, st: status.JobStatus, spec_raw: dict[str, Any]
) -> None:
    obs = observe(spec_raw, st)
    action = decide(obs)
    assert action.kind is ActionKind.NOTHING and action.reason == "RollbackImpossible"
    assert action.warning and action.event and why in action.message
    new = status_mod.next_status(obs, action, Outcome())
    assert new.rollout is not None and new.rollout.state is RolloutState.UNSTABLE
    again = decide(replace(obs, status=new, now=NOW + 5))
    assert again.reason != "RollbackImpossible"


def test_an_unstable_spec_that_proves_itself_late_is_stable() -> None:
    st = verifying(NOW - 400, rollout=status.RolloutStatus(RolloutState.UNSTABLE, NOW - 100))
    obs = observe(st=st, driver=running_driver(NOW - 50), control=fresh_checkpoint(NOW - 5))
    new = status_mod.next_status(obs, Action.nothing(Phase.RUNNING), Outcome())
    assert new.rollout is not None and new.rollout.state is RolloutState.STABLE
    assert new.last_stable_spec == S2


# -- the matrix -------------------------------------------------------------------------------

ROLLOUTS = {
    "none": None,
    "verifying-young": status.RolloutStatus(RolloutState.VERIFYING, NOW - 60),
    "verifying-expired": status.RolloutStatus(RolloutState.VERIFYING, NOW - 301),
    "stable": status.RolloutStatus(RolloutState.STABLE, NOW - 900),
    "rolled-back": status.RolloutStatus(RolloutState.ROLLED_BACK, NOW - 900),
    "unstable": status.RolloutStatus(RolloutState.UNSTABLE, NOW - 900),
}
STABLE_SPECS = {"none": None, "older": S1, "same": S2}
INTENTS = {
    "none": None,
    "deploy": intent.Intent.deploy(
        "r-1", Reason.DRIVER_FAILED, NOW - 5, intent.RestoreTarget.latest(), not_before=NOW + 100
    ),
    "deploy-due": intent.Intent.deploy(
        "r-2", Reason.DRIVER_FAILED, NOW - 50, intent.RestoreTarget.latest(), not_before=NOW - 1
    ),
    "stop": intent.Intent.stop("s-1", Reason.UPGRADE, NOW - 5, intent.StopPurpose.UPGRADE),
}
DRIVERS = {
    "running": running_driver(),
    "failed": DriverView(
        DriverState.FAILED, "job-driver", "d-1", NOW - 100, "OOMKilled (exit code 137)", 137
    ),
    "absent": DriverView.absent(),
}
PHASES = [Phase.RUNNING, Phase.RESTARTING, Phase.FAILED]


@pytest.mark.parametrize(
    ("enabled", "rollout", "stable", "pending", "driver", "phase"),
    list(itertools.product((True, False), ROLLOUTS, STABLE_SPECS, INTENTS, DRIVERS, PHASES)),
)
def test_matrix_invariants(
    enabled: bool, rollout: str, stable: str, pending: str, driver: str, phase: Phase
) -> None:
    spec_raw = raw_spec("jobs:2", enabled=enabled)
    st = status.JobStatus(
        phase=phase,
        last_reconciled_spec=spec_raw,
        last_stable_spec=STABLE_SPECS[stable],
        rollout=ROLLOUTS[rollout],
        intent=INTENTS[pending],
    )
    if stable == "same":
        st = st.evolve(last_stable_spec=spec_raw)
    obs = observe(
        spec_raw,
        st,
        driver=DRIVERS[driver],
        control=ControlView(True, True) if driver == "running" else ControlView(False),
    )
    action = decide(obs)
    rolls_back = action.reason == "RolledBack"
    # A rollback happens exactly when enabled, expired, possible and not stopping.
    assert rolls_back == (
        enabled and rollout == "verifying-expired" and stable == "older" and pending != "stop"
    )
    if rolls_back:
        assert action.rollout is not None and action.rollout.state is RolloutState.ROLLED_BACK
        assert action.intent is not None and action.intent.restore == intent.RestoreTarget.latest()
    if action.reason == "RollbackImpossible":
        assert enabled and rollout == "verifying-expired" and stable != "older"
    # Deploys build from the stable spec exactly while rolled back.
    if action.kind is ActionKind.DEPLOY:
        assert (action.spec is not None) == (rollout == "rolled-back" and stable != "none")
    # Bookkeeping never records a spec as stable while rolled back.
    new = status_mod.next_status(obs, action, Outcome())
    if rollout == "rolled-back" and not rolls_back:
        assert new.last_stable_spec == st.last_stable_spec
