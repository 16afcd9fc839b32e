"""decide() over a matrix of (spec change x phase x driver state x checkpoint store)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from barrier_runtime.core import types
from cjob_operator import manifests
from cjob_operator.decide import backoff_delay, decide
from cjob_operator.model import intent, spec, status
from cjob_operator.model.action import Action, ActionKind
from cjob_operator.model.enums import DriverState, Phase
from cjob_operator.model.observation import (
    CheckpointInfo,
    ControlView,
    DriverView,
    Observation,
    StoreView,
    Unusable,
)
from cjob_operator.model.reasons import Reason

NOW = 1_700_000_000.0


def raw_spec(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "image": "registry.local/jobs:1",
        "pipeline": {"module": "jobs.wordcount"},
        "parallelism": 2,
        "maxParallelism": 128,
        "checkpointing": {"interval": "30s"},
        "storage": {"endpoint": "file:///tmp/store", "bucket": "ckpt"},
        "restartPolicy": {
            "type": "Always",
            "maxRestarts": 3,
            "window": "1h",
            "backoff": {"initial": "10s", "max": "5m", "multiplier": 2, "jitter": 0.0},
        },
        "upgradeMode": "LastCheckpoint",
    }
    base.update(overrides)
    return base


CHK40 = CheckpointInfo(40, path="file:///tmp/store/ckpt/ns/job/checkpoints/chk-0000000040")
CHK42 = CheckpointInfo(42, path="file:///tmp/store/ckpt/ns/job/checkpoints/chk-0000000042")
SP41 = CheckpointInfo(
    41,
    kind=types.CheckpointKind.SAVEPOINT,
    path="file:///tmp/store/ckpt/ns/job/savepoints/sp-0000000041",
)

STORES = {
    "empty": StoreView.empty(),
    "usable": StoreView(readable=True, latest_checkpoint=CHK42, latest_savepoint=SP41),
    "corrupt-only": StoreView(
        readable=True,
        unusable=(
            Unusable(43, types.CheckpointKind.CHECKPOINT, "_metadata does not parse"),
            Unusable(42, types.CheckpointKind.CHECKPOINT, "state object missing"),
        ),
    ),
    "unreadable": StoreView.unreadable("connection refused"),
}

READY = ControlView(
    reachable=True,
    ready=True,
    job_state="RUNNING",
    last_trigger_time=NOW - 5,
    latest_completed=CHK42,
)


def running_status(**changes: Any) -> status.JobStatus:
    st = status.JobStatus(
        phase=Phase.RUNNING, observed_generation=1, last_reconciled_spec=raw_spec()
    )
    return st.evolve(**changes)


def observe(
    spec_raw: dict[str, Any] | None = None,
    st: status.JobStatus | None = None,
    driver: DriverView | None = None,
    control: ControlView | None = READY,
    store: StoreView | None = None,
    now: float = NOW,
    deleting: bool = False,
) -> Observation:
    spec_raw = raw_spec() if spec_raw is None else spec_raw
    return Observation(
        namespace="ns",
        name="job",
        uid="uid-1",
        generation=2,
        deleting=deleting,
        spec=spec.JobSpec.from_storage(spec_raw),
        spec_error=None,
        status=running_status() if st is None else st,
        driver=DriverView(DriverState.RUNNING, "job-driver", "d-1", NOW - 600)
        if driver is None
        else driver,
        control=control,
        store=STORES["usable"] if store is None else store,
        now=now,
    )


def failed_driver(code: int = 137, message: str = "OOMKilled (exit code 137)") -> DriverView:
    """A driver pod that died; by default killed (OOM), which a restart may heal."""
    return DriverView(DriverState.FAILED, "job-driver", "d-1", NOW - 60, message, code)


# -- the four named cases ---------------------------------------------------------


def test_failed_driver_with_completed_checkpoints_restarts_from_the_newest() -> None:
    first = decide(observe(driver=failed_driver(), control=None))
    assert first.kind is ActionKind.SCHEDULE
    assert first.phase is Phase.RESTARTING
    assert first.intent is not None and first.intent.restore == intent.RestoreTarget.latest()
    assert first.intent.not_before == NOW + 10.0
    assert first.restarts is not None and first.restarts.count == 1
    assert first.restarts.next_attempt_time == NOW + 10.0

    # The failed pod is still there: it is deleted first.
    st = running_status(phase=Phase.RESTARTING, intent=first.intent, restarts=first.restarts)
    second = decide(observe(st=st, driver=failed_driver(), control=None))
    assert second.kind is ActionKind.DELETE_DRIVER

    # Gone, but the backoff has not expired: wait.
    absent = DriverView.absent()
    third = decide(observe(st=st, driver=absent, control=None, now=NOW + 5))
    assert third.kind is ActionKind.WAIT and third.until == NOW + 10.0

    # Backoff expired: deploy from the newest usable snapshot (checkpoint 42 > savepoint 41).
    fourth = decide(observe(st=st, driver=absent, control=None, now=NOW + 11))
    assert fourth.kind is ActionKind.DEPLOY
    assert fourth.restore is not None and fourth.restore.arg == "42"
    assert fourth.restore.checkpoint_id == 42


def test_failed_driver_with_only_corrupt_checkpoints_fails_instead_of_starting_empty() -> None:
    action = decide(observe(driver=failed_driver(), control=None, store=STORES["corrupt-only"]))
    assert action.kind is ActionKind.FAIL
    assert action.phase is Phase.FAILED
    assert action.reason == "NoUsableCheckpoint"
    assert "none can be restored" in action.message and "allowFreshStart" in action.message
    assert "checkpoint 43 (_metadata does not parse)" in action.message


def test_corrupt_checkpoints_at_deploy_time_also_fail() -> None:
    it = intent.Intent.deploy(
        "r-1", Reason.DRIVER_FAILED, NOW - 20, intent.RestoreTarget.latest(), not_before=NOW - 1
    )
    action = decide(
        observe(
            st=running_status(phase=Phase.RESTARTING, intent=it),
            driver=DriverView.absent(),
            control=None,
            store=STORES["corrupt-only"],
        )
    )
    assert action.kind is ActionKind.FAIL and action.reason == "NoUsableCheckpoint"


def test_allow_fresh_start_accepts_losing_unusable_state() -> None:
    it = intent.Intent.deploy("r-1", Reason.DRIVER_FAILED, NOW - 20, intent.RestoreTarget.latest())
    action = decide(
        observe(
            spec_raw=raw_spec(allowFreshStart=True),
            st=running_status(phase=Phase.RESTARTING, intent=it),
            driver=DriverView.absent(),
            control=None,
            store=STORES["corrupt-only"],
        )
    )
    assert action.kind is ActionKind.DEPLOY and action.restore is None


def test_upgrade_in_savepoint_mode_takes_a_savepoint_then_redeploys_from_it() -> None:
    new_spec = raw_spec(image="registry.local/jobs:2", upgradeMode="Savepoint")
    old = running_status(last_reconciled_spec=raw_spec(upgradeMode="Savepoint"))
    first = decide(observe(spec_raw=new_spec, st=old))
    assert first.kind is ActionKind.STOP and first.phase is Phase.UPGRADING
    assert first.intent is not None and first.intent.purpose is intent.StopPurpose.UPGRADE

    sp_path = "file:///tmp/store/ckpt/ns/job/savepoints/sp-0000000043"
    done = first.intent.evolve(done=True, savepoint_path=sp_path, savepoint_id=43)
    second = decide(
        observe(
            spec_raw=new_spec,
            st=old.evolve(intent=done),
            driver=DriverView(DriverState.SUCCEEDED, "job-driver", "d-1"),
        )
    )
    assert second.kind is ActionKind.SCHEDULE
    assert second.intent is not None
    assert second.intent.restore == intent.RestoreTarget.at_path(sp_path, 43)
    assert second.reconciled_spec is not None
    assert second.reconciled_spec["image"] == "registry.local/jobs:2"

    st = old.evolve(intent=second.intent, last_reconciled_spec=second.reconciled_spec)
    third = decide(
        observe(
            spec_raw=new_spec, st=st, driver=DriverView(DriverState.SUCCEEDED, "job-driver", "d-1")
        )
    )
    assert third.kind is ActionKind.DELETE_DRIVER

    fourth = decide(observe(spec_raw=new_spec, st=st, driver=DriverView.absent(), control=None))
    assert fourth.kind is ActionKind.DEPLOY and fourth.phase is Phase.UPGRADING
    assert fourth.restore is not None and fourth.restore.arg == sp_path
    assert fourth.restore.kind is types.CheckpointKind.SAVEPOINT


def test_suspend_takes_a_savepoint_then_deletes_the_driver() -> None:
    suspended = raw_spec(state="Suspended")
    first = decide(observe(spec_raw=suspended))
    assert first.kind is ActionKind.STOP and first.phase is Phase.SUSPENDING
    assert first.intent is not None and first.intent.purpose is intent.StopPurpose.SUSPEND

    done = first.intent.evolve(done=True, savepoint_path="s3://b/ns/job/savepoints/sp-44")
    second = decide(
        observe(
            spec_raw=suspended,
            st=running_status(intent=done),
            driver=DriverView(DriverState.SUCCEEDED, "job-driver", "d-1"),
        )
    )
    assert second.kind is ActionKind.DELETE_DRIVER and second.phase is Phase.SUSPENDING

    third = decide(
        observe(
            spec_raw=suspended,
            st=running_status(intent=done),
            driver=DriverView.absent(),
            control=None,
        )
    )
    assert third.kind is ActionKind.NOTHING and third.phase is Phase.SUSPENDED
    assert third.clear_intent and third.reason == "Suspended"


def test_resume_restores_from_the_recorded_savepoint() -> None:
    saved = status.SavepointRef(44, "s3://b/ns/job/savepoints/sp-0000000044", NOW - 100)
    st = running_status(
        phase=Phase.SUSPENDED, checkpoints=status.CheckpointsStatus(last_savepoint=saved)
    )
    action = decide(observe(st=st, driver=DriverView.absent(), control=None))
    assert action.kind is ActionKind.SCHEDULE and action.intent is not None
    assert action.intent.reason == "Resumed"
    assert action.intent.restore.path == saved.path


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


# -- checkpoints -------------------------------------------------------------------------


def test_periodic_checkpoints_are_left_to_the_driver() -> None:
    """Issue 10 finding 5: the operator's tick cannot honour a sub-tick interval; the
    driver's coordinator paces periodic checkpoints, so the operator never triggers them."""
    stale = ControlView(reachable=True, ready=True, last_trigger_time=NOW - 3600)
    never = ControlView(reachable=True, ready=True)
    old = DriverView(DriverState.RUNNING, "job-driver", "d-1", NOW - 3600)
    for obs in (observe(control=stale), observe(control=never, driver=old)):
        assert decide(obs).kind is ActionKind.NOTHING
    sp = spec.JobSpec.from_storage(raw_spec(checkpointing={"interval": "200ms"}))
    doc = manifests.job_config(manifests.JobRef("ns", "job", "u"), sp)
    assert doc["checkpointing"]["triggeredBy"] == "driver"
    assert doc["checkpointing"]["intervalSeconds"] == 0.2


def test_savepoint_nonce_triggers_a_savepoint_once() -> None:
    action = decide(observe(spec_raw=raw_spec(savepointTriggerNonce="a")))
    assert action.kind is ActionKind.TRIGGER and action.snapshot is types.CheckpointKind.SAVEPOINT
    assert action.reconciled_spec is not None
    assert action.reconciled_spec["savepointTriggerNonce"] == "a"
    handled = running_status(last_reconciled_spec=action.reconciled_spec)
    again = decide(observe(spec_raw=raw_spec(savepointTriggerNonce="a"), st=handled))
    assert again.kind is ActionKind.NOTHING


def test_checkpoint_nonce_triggers_a_checkpoint() -> None:
    action = decide(observe(spec_raw=raw_spec(checkpointTriggerNonce="x")))
    assert action.kind is ActionKind.TRIGGER and action.snapshot is types.CheckpointKind.CHECKPOINT
    assert action.reason == "ManualCheckpointTriggered"


# -- lifecycle -----------------------------------------------------------------------------


def test_create_deploys_restoring_the_latest_checkpoint_of_a_previous_incarnation() -> None:
    new = status.JobStatus()
    first = decide(observe(st=new, driver=DriverView.absent(), control=None))
    assert first.kind is ActionKind.SCHEDULE and first.phase is Phase.DEPLOYING
    assert first.intent is not None and first.intent.not_before is None
    st = new.evolve(intent=first.intent, last_reconciled_spec=first.reconciled_spec)
    second = decide(observe(st=st, driver=DriverView.absent(), control=None))
    assert second.kind is ActionKind.DEPLOY
    assert second.restore is not None and second.restore.arg == "42"
    empty = decide(observe(st=st, driver=DriverView.absent(), control=None, store=STORES["empty"]))
    assert empty.kind is ActionKind.DEPLOY and empty.restore is None


def test_restore_from_path_with_restore_nonce() -> None:
    path = "s3://ckpt/ns/job/savepoints/sp-0000000007"
    sp = raw_spec(restoreFrom={"path": path}, restoreNonce="n1")
    action = decide(observe(spec_raw=sp))
    assert action.kind is ActionKind.SCHEDULE and action.intent is not None
    assert action.intent.restore.path == path


def test_deploy_intent_settles_when_its_pod_exists() -> None:
    it = intent.Intent.deploy("d-9", Reason.CREATED, NOW - 5, intent.RestoreTarget.latest())
    st = running_status(phase=Phase.DEPLOYING, intent=it)
    pending = DriverView(DriverState.PENDING, "job-driver", "d-9")
    action = decide(observe(st=st, driver=pending, control=None))
    assert action.kind is ActionKind.NOTHING and action.clear_intent
    assert action.phase is Phase.DEPLOYING


def test_stateless_upgrade_starts_empty_only_when_chosen() -> None:
    new = raw_spec(image="registry.local/jobs:2", upgradeMode="Stateless")
    old = running_status(last_reconciled_spec=raw_spec(upgradeMode="Stateless"))
    action = decide(observe(spec_raw=new, st=old))
    assert action.kind is ActionKind.SCHEDULE and action.intent is not None
    assert action.intent.restore.mode is intent.RestoreMode.NONE


def test_ignorable_change_is_accepted_without_redeploy() -> None:
    new = raw_spec(restartPolicy={"maxRestarts": 9})
    action = decide(observe(spec_raw=new))
    assert action.kind is ActionKind.NOTHING and action.reconciled_spec is not None
    assert action.reconciled_spec["restartPolicy"] == {"maxRestarts": 9}


def test_invalid_spark_conf_is_rejected_with_a_clear_message() -> None:
    bad = raw_spec(sparkConf={"spark.kubernetes.authenticate.driver.serviceAccountName": "adm"})
    action = decide(observe(spec_raw=bad))
    assert action.kind is ActionKind.REJECT
    assert "spark.kubernetes.authenticate.driver.serviceAccountName" in action.message


def test_incremental_checkpoints_are_refused_not_ignored() -> None:
    """Issue 10 finding 5: nothing implements incremental checkpoints yet."""
    bad = raw_spec(checkpointing={"interval": "30s", "incremental": True})
    action = decide(observe(spec_raw=bad))
    assert action.kind is ActionKind.REJECT and action.reason == "InvalidSpec"
    assert action.warning  # a warning Event, and status.error carries the message
    assert "spec.checkpointing.incremental is not implemented yet" in action.message


def test_a_stop_carries_its_decided_retry_time_which_doubles_per_attempt() -> None:
    """The acting layer writes ``action.retry_at`` into the intent when the final
    savepoint fails; it computes no backoff of its own."""
    sp = raw_spec(upgradeMode="Savepoint", checkpointing={"interval": "5s"})
    first = decide(observe(spec_raw=sp, deleting=True))
    assert first.kind is ActionKind.STOP and first.intent is not None
    assert first.intent.attempts == 1 and first.retry_at == NOW + 5
    failed = first.intent.evolve(error="409", retry_at=first.retry_at)
    waiting = decide(observe(spec_raw=sp, st=running_status(intent=failed), deleting=True))
    assert waiting.kind is ActionKind.WAIT and waiting.reason is Reason.SAVEPOINT_RETRY
    later = NOW + 6
    second = decide(
        observe(spec_raw=sp, st=running_status(intent=failed), deleting=True, now=later)
    )
    assert second.kind is ActionKind.STOP and second.intent is not None
    assert second.intent.attempts == 2 and second.retry_at == later + 10


def test_delete_with_savepoint_mode_stops_with_savepoint_first() -> None:
    sp = raw_spec(upgradeMode="Savepoint")
    first = decide(observe(spec_raw=sp, deleting=True))
    assert first.kind is ActionKind.STOP and first.phase is Phase.DELETING
    assert first.intent is not None
    done = first.intent.evolve(done=True, savepoint_path="s3://x")
    second = decide(
        observe(
            spec_raw=sp,
            st=running_status(intent=done),
            deleting=True,
            driver=DriverView(DriverState.SUCCEEDED, "job-driver", "d-1"),
        )
    )
    assert second.kind is ActionKind.DELETE_DRIVER
    third = decide(
        observe(
            spec_raw=sp, st=running_status(intent=done), deleting=True, driver=DriverView.absent()
        )
    )
    assert third.kind is ActionKind.RELEASE


def test_delete_in_last_checkpoint_mode_just_deletes() -> None:
    assert decide(observe(deleting=True)).kind is ActionKind.DELETE_DRIVER
    released = decide(observe(deleting=True, driver=DriverView.absent()))
    assert released.kind is ActionKind.RELEASE


# -- the matrix -------------------------------------------------------------------------

CHANGES = {
    "none": {},
    "ignorable": {"restartPolicy": {"maxRestarts": 5}},
    "upgrade": {"image": "registry.local/jobs:2"},
    "restart-nonce": {"restartNonce": "r1"},
    "suspend": {"state": "Suspended"},
}
PHASES = [Phase.RUNNING, Phase.RESTARTING, Phase.SUSPENDED, Phase.FAILED]
DRIVERS = {
    "running": DriverView(DriverState.RUNNING, "job-driver", "d-1", NOW - 600),
    "pending": DriverView(DriverState.PENDING, "job-driver", "d-1"),
    "failed": failed_driver(),
    "succeeded": DriverView(DriverState.SUCCEEDED, "job-driver", "d-1"),
    "absent": DriverView.absent(),
}


def _run_to_deploy(obs: Observation) -> Action:
    """Follow decisions like the reconciler would until something other than bookkeeping."""
    action = decide(obs)
    for _ in range(4):
        if action.kind is not ActionKind.SCHEDULE or action.intent is None:
            return action
        st = obs.status.evolve(intent=action.intent)
        later = (action.until or obs.now) + 1
        obs = observe(
            spec_raw=dict(obs.spec.raw) if obs.spec else None,
            st=st,
            driver=DriverView.absent(),
            control=None,
            store=obs.store,
            now=later,
        )
        action = decide(obs)
    return action


@pytest.mark.parametrize(
    ("change", "phase", "driver", "store"),
    list(itertools.product(CHANGES, PHASES, DRIVERS, STORES)),
)
def test_matrix_invariants(change: str, phase: Phase, driver: str, store: str) -> None:
    spec_raw = raw_spec(**CHANGES[change])
    obs = observe(
        spec_raw=spec_raw,
        st=running_status(phase=phase),
        driver=DRIVERS[driver],
        control=READY if driver == "running" else None,
        store=STORES[store],
    )
    action = _run_to_deploy(obs)

    # Never silently start from empty state while snapshots exist.
    if action.kind is ActionKind.DEPLOY and action.restore is None:
        assert store == "empty"
    # Unusable-only state never leads to a deploy.
    if store == "corrupt-only":
        assert action.kind is not ActionKind.DEPLOY or action.restore is not None
    # A deploy from a readable store with usable snapshots uses the newest one.
    if action.kind is ActionKind.DEPLOY and store == "usable":
        assert action.restore is not None and action.restore.arg == "42"
    # An unreadable store never leads to a deploy that chooses "latest" blindly.
    if store == "unreadable":
        assert action.kind is not ActionKind.DEPLOY
    # Suspension never deploys; it stops, deletes or rests.
    if change == "suspend":
        assert action.kind in {
            ActionKind.STOP,
            ActionKind.DELETE_DRIVER,
            ActionKind.NOTHING,
            ActionKind.RECORD,
        }
        if driver == "absent":
            assert action.phase is Phase.SUSPENDED
    # A failed job stays failed unless told otherwise.
    if phase is Phase.FAILED and change in {"none", "ignorable"}:
        assert action.kind is ActionKind.NOTHING and action.phase is Phase.FAILED
    # Every action names its phase and failures explain themselves.
    if action.kind is ActionKind.FAIL:
        assert action.message and action.phase is Phase.FAILED
    # A healthy running job with no change only checkpoints or rests.
    if change in {"none", "ignorable"} and driver == "running" and phase is Phase.RUNNING:
        assert action.kind in {ActionKind.NOTHING, ActionKind.TRIGGER}


def test_upgrade_is_refused_without_killing_the_driver_when_state_is_unusable() -> None:
    action = decide(
        observe(spec_raw=raw_spec(image="registry.local/jobs:2"), store=STORES["corrupt-only"])
    )
    assert action.kind is ActionKind.REJECT and action.reason == "UpgradeRefused"
    assert action.phase is Phase.RUNNING


def test_setting_allow_fresh_start_retries_a_job_that_failed_for_lack_of_state() -> None:
    st = running_status(phase=Phase.FAILED)
    action = decide(
        observe(
            spec_raw=raw_spec(allowFreshStart=True),
            st=st,
            driver=DriverView.absent(),
            control=None,
            store=STORES["corrupt-only"],
        )
    )
    assert action.kind is ActionKind.SCHEDULE and action.intent is not None
    st2 = st.evolve(intent=action.intent, last_reconciled_spec=action.reconciled_spec)
    deploy = decide(
        observe(
            spec_raw=raw_spec(allowFreshStart=True),
            st=st2,
            driver=DriverView.absent(),
            control=None,
            store=STORES["corrupt-only"],
        )
    )
    assert deploy.kind is ActionKind.DEPLOY and deploy.restore is None


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
