"""decide() on the named cases, checkpoints and the job's life cycle."""

from __future__ import annotations

import dataclasses

from cjob_operator_testing.observations import (
    NOW,
    STORES,
    failed_driver,
    observe,
    raw_spec,
    running_status,
)

from barrier_runtime.core import types
from cjob_operator import manifests
from cjob_operator.decide import decide
from cjob_operator.model import intent, spec, status
from cjob_operator.model.action import ActionKind
from cjob_operator.model.enums import DriverState, Phase
from cjob_operator.model.observation import (
    ControlView,
    DriverView,
)
from cjob_operator.model.reasons import Reason

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


def test_incremental_checkpoints_are_accepted_now_that_the_runtime_takes_them() -> None:
    """Issue 32: refused while nothing implemented them; the driver reads the flag now."""
    spec = raw_spec(checkpointing={"interval": "30s", "incremental": True})
    action = decide(observe(spec_raw=spec))
    assert action.kind is not ActionKind.REJECT, action.message


def test_local_recovery_without_incremental_checkpoints_is_refused() -> None:
    bad = raw_spec(checkpointing={"interval": "30s", "localRecovery": True})
    action = decide(observe(spec_raw=bad))
    assert action.kind is ActionKind.REJECT and action.reason == "InvalidSpec"
    assert "spec.checkpointing.localRecovery needs incremental: true" in action.message


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


def test_delete_of_a_job_edited_into_an_invalid_spec_keeps_the_deployed_savepoint_mode() -> None:
    deployed = running_status(last_reconciled_spec=raw_spec(upgradeMode="Savepoint"))
    refused = dataclasses.replace(
        observe(st=deployed, deleting=True), spec=None, spec_error="spec.parallelism: Invalid"
    )
    first = decide(refused)
    assert first.kind is ActionKind.STOP and first.phase is Phase.DELETING


def test_delete_in_last_checkpoint_mode_just_deletes() -> None:
    assert decide(observe(deleting=True)).kind is ActionKind.DELETE_DRIVER
    released = decide(observe(deleting=True, driver=DriverView.absent()))
    assert released.kind is ActionKind.RELEASE
