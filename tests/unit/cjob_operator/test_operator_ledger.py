"""The savepoint history and the nonce acknowledgements, from decision to settled outcome.

Each test walks reconciles the way the loop does: ``decide`` on an observation, the
status written ahead (for intents) and after acting, the next observation built on
that status.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from barrier_runtime.core import types
from cjob_operator import ledger
from cjob_operator import status as status_mod
from cjob_operator.decide import decide
from cjob_operator.model import intent, spec, status
from cjob_operator.model.acks import NonceAck
from cjob_operator.model.action import Action, ActionKind
from cjob_operator.model.enums import (
    DriverState,
    NonceField,
    NonceOutcome,
    Phase,
    SavepointKind,
    SavepointState,
)
from cjob_operator.model.observation import (
    CheckpointInfo,
    ControlView,
    DriverView,
    EntryStatus,
    HistoryEntry,
    Observation,
    StoreView,
)
from cjob_operator.model.outcome import Outcome
from cjob_operator.model.reasons import Reason
from cjob_operator.model.savepoints import SavepointRecord

NOW = 1_700_000_000.0
SP_PATH = "file:///s/ckpt/ns/job/savepoints/sp-0000000044"


def raw_spec(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "image": "registry.local/jobs:1",
        "pipeline": {"module": "jobs.wordcount"},
        "checkpointing": {"interval": "30s", "timeout": "2m"},
        "storage": {"endpoint": "file:///s", "bucket": "ckpt"},
    }
    return {**base, **overrides}


def running(**changes: Any) -> status.JobStatus:
    return status.JobStatus(
        phase=Phase.RUNNING, observed_generation=1, last_reconciled_spec=raw_spec()
    ).evolve(**changes)


def ready(*history: HistoryEntry) -> ControlView:
    return ControlView(
        reachable=True,
        ready=True,
        job_state="RUNNING",
        latest_completed=CheckpointInfo(42, time=NOW - 5),
        history=history,
    )


def observe(
    spec_raw: dict[str, Any] | None = None,
    st: status.JobStatus | None = None,
    driver: DriverView | None = None,
    control: ControlView | None = None,
    store: StoreView | None = None,
    now: float = NOW,
) -> Observation:
    return Observation(
        namespace="ns",
        name="job",
        uid="u",
        generation=2,
        deleting=False,
        spec=spec.JobSpec.from_storage(spec_raw or raw_spec()),
        spec_error=None,
        status=st or running(),
        driver=driver or DriverView(DriverState.RUNNING, "job-driver", "d-1", NOW - 600),
        control=ready() if control is None else control,
        store=StoreView.empty() if store is None else store,
        now=now,
    )


def after(obs: Observation, action: Action, outcome: Outcome | None = None) -> status.JobStatus:
    return status_mod.next_status(obs, action, outcome or Outcome())


# -- savepointTriggerNonce: history and acknowledgement -----------------------------------


def test_a_manual_savepoint_is_recorded_then_settled_from_the_drivers_history() -> None:
    first = observe(raw_spec(savepointTriggerNonce=7))
    action = decide(first)
    assert action.kind is ActionKind.TRIGGER and action.nonce == "savepointTriggerNonce"
    st = after(first, action, Outcome(triggered_id=44))
    [rec] = st.savepoints.history
    assert (rec.id, rec.kind, rec.state) == (44, SavepointKind.MANUAL, SavepointState.IN_PROGRESS)
    ack = st.nonces.savepoint_trigger
    assert ack is not None and ack.value == 7 and ack.snapshot_id == 44
    assert ack.outcome is NonceOutcome.IN_PROGRESS and ack.time == NOW

    done = HistoryEntry(
        44, EntryStatus.COMPLETED, types.CheckpointKind.SAVEPOINT, SP_PATH, NOW, NOW + 3
    )
    second = observe(raw_spec(savepointTriggerNonce=7), st=st, control=ready(done), now=NOW + 5)
    assert decide(second).kind is ActionKind.NOTHING  # the nonce is handled
    settled = after(second, decide(second))
    [rec] = settled.savepoints.history
    assert rec.state is SavepointState.COMPLETED and rec.path == SP_PATH
    assert rec.completion_time == NOW + 3
    ack = settled.nonces.savepoint_trigger
    assert ack is not None and ack.outcome is NonceOutcome.SUCCEEDED
    assert ack.settled_time == NOW + 5 and SP_PATH in ack.message
    assert ledger.events(st, settled) == [
        (False, "SavepointCompleted", f"manual savepoint 44 completed at {SP_PATH}"),
        (False, "NonceSucceeded", f"savepointTriggerNonce 7: savepoint 44 completed at {SP_PATH}"),
    ]
    assert (
        ledger.events(
            settled, after(replace(second, status=settled), Action.nothing(Phase.RUNNING))
        )
        == []
    )  # announced once


def test_the_store_settles_a_savepoint_the_driver_forgot() -> None:
    rec = status.JobStatus().savepoints.record(_in_progress(44))
    stored = StoreView(
        readable=True,
        latest_savepoint=CheckpointInfo(
            44, types.CheckpointKind.SAVEPOINT, "s3://ckpt/ns/job/savepoints/sp-0000000044", NOW + 2
        ),
    )
    st = after(
        observe(st=running(savepoints=rec), store=stored, now=NOW + 4),
        Action.nothing(Phase.RUNNING),
    )
    assert st.savepoints.history[0].state is SavepointState.COMPLETED
    assert st.savepoints.history[0].path == "s3://ckpt/ns/job/savepoints/sp-0000000044"


def _in_progress(sid: int, kind: SavepointKind = SavepointKind.MANUAL) -> SavepointRecord:
    return SavepointRecord(kind, SavepointState.IN_PROGRESS, NOW, sid)


def test_a_refused_trigger_is_failed_at_once() -> None:
    obs = observe(raw_spec(savepointTriggerNonce=8))
    st = after(obs, decide(obs), Outcome(error="could not trigger a savepoint: 409 busy"))
    [rec] = st.savepoints.history
    assert rec.state is SavepointState.FAILED and rec.id is None and "409" in (rec.message or "")
    ack = st.nonces.savepoint_trigger
    assert ack is not None and ack.outcome is NonceOutcome.FAILED and "409" in ack.message


def test_a_savepoint_the_driver_reports_failed_fails_its_nonce() -> None:
    obs = observe(raw_spec(savepointTriggerNonce=9))
    st = after(obs, decide(obs), Outcome(triggered_id=45))
    failed = HistoryEntry(
        45, EntryStatus.FAILED, types.CheckpointKind.SAVEPOINT, failure_reason="TIMEOUT"
    )
    later = after(
        observe(raw_spec(savepointTriggerNonce=9), st=st, control=ready(failed), now=NOW + 9),
        Action.nothing(Phase.RUNNING),
    )
    assert later.savepoints.history[0].state is SavepointState.FAILED
    ack = later.nonces.savepoint_trigger
    assert ack is not None and ack.outcome is NonceOutcome.FAILED and "TIMEOUT" in ack.message
    assert (
        True,
        "SavepointFailed",
        "manual savepoint 45 failed: the driver reports it failed: TIMEOUT",
    ) in ledger.events(st, later)


def test_a_savepoint_never_seen_fails_after_the_timeout_and_a_margin() -> None:
    st = running(savepoints=status.JobStatus().savepoints.record(_in_progress(46)))
    patience = 120 + ledger.SETTLE_MARGIN
    waiting = after(observe(st=st, now=NOW + patience), Action.nothing(Phase.RUNNING))
    assert waiting.savepoints.history[0].state is SavepointState.IN_PROGRESS
    given_up = after(observe(st=st, now=NOW + patience + 1), Action.nothing(Phase.RUNNING))
    assert given_up.savepoints.history[0].state is SavepointState.FAILED
    assert "not seen completing within 3m" in (given_up.savepoints.history[0].message or "")


def test_a_driver_restart_fails_the_savepoint_it_was_taking() -> None:
    st = running(savepoints=status.JobStatus().savepoints.record(_in_progress(47)))
    new_driver = DriverView(DriverState.RUNNING, "job-driver", "r-2", NOW + 30)
    later = after(observe(st=st, driver=new_driver, now=NOW + 40), Action.nothing(Phase.RUNNING))
    assert later.savepoints.history[0].state is SavepointState.FAILED
    assert "restarted" in (later.savepoints.history[0].message or "")


def test_final_savepoints_of_suspend_are_in_the_history_without_a_second_event() -> None:
    obs = observe(raw_spec(state="Suspended"))
    action = decide(obs)
    assert action.kind is ActionKind.STOP
    st = after(
        obs, action, Outcome(intent=action.intent, savepoint=status.SavepointRef(48, SP_PATH, NOW))
    )
    [rec] = st.savepoints.history
    assert (rec.kind, rec.state, rec.id, rec.path) == (
        SavepointKind.SUSPEND,
        SavepointState.COMPLETED,
        48,
        SP_PATH,
    )
    assert ledger.events(obs.status, st) == []  # reconcile posts SavepointCompleted itself


# -- checkpointTriggerNonce -----------------------------------------------------------------


def test_a_manual_checkpoint_is_acknowledged_then_settled() -> None:
    obs = observe(raw_spec(checkpointTriggerNonce=3))
    action = decide(obs)
    st = after(obs, action, Outcome(triggered_id=50))
    ack = st.nonces.checkpoint_trigger
    assert ack is not None and ack.outcome is NonceOutcome.IN_PROGRESS and ack.snapshot_id == 50
    assert st.savepoints.history == ()  # checkpoints are not savepoints

    done = ready(HistoryEntry(50, EntryStatus.COMPLETED, completion_time=NOW + 1))
    settled = after(
        observe(raw_spec(checkpointTriggerNonce=3), st=st, control=done, now=NOW + 2),
        Action.nothing(Phase.RUNNING),
    )
    ack = settled.nonces.checkpoint_trigger
    assert ack is not None and ack.outcome is NonceOutcome.SUCCEEDED
    assert ack.message == "checkpoint 50 completed"


def test_a_manual_checkpoint_without_news_is_unknown_after_the_timeout() -> None:
    obs = observe(raw_spec(checkpointTriggerNonce=4))
    st = after(obs, decide(obs), Outcome(triggered_id=51))
    later = after(
        observe(raw_spec(checkpointTriggerNonce=4), st=st, now=NOW + 500),
        Action.nothing(Phase.RUNNING),
    )
    ack = later.nonces.checkpoint_trigger
    assert ack is not None and ack.outcome is NonceOutcome.UNKNOWN
    assert (
        True,
        "NonceUnknown",
        "checkpointTriggerNonce 4: no outcome of checkpoint 51 seen within 3m",
    ) in ledger.events(st, later)


# -- restartNonce / restoreNonce ------------------------------------------------------------


def test_a_restart_nonce_is_acknowledged_ahead_and_succeeds_once_the_job_runs_again() -> None:
    obs = observe(raw_spec(restartNonce=5))
    action = decide(obs)
    assert action.kind is ActionKind.SCHEDULE and action.nonce == "restartNonce"
    ahead = status_mod.write_ahead(obs, action)
    assert ahead is not None
    ack = ahead.nonces.restart
    assert ack is not None and ack.value == 5 and ack.outcome is NonceOutcome.IN_PROGRESS
    st = after(obs, action)
    assert st.nonces == ahead.nonces

    # the old driver still runs: not yet
    old_driver = after(
        observe(raw_spec(restartNonce=5), st=st.evolve(intent=None), now=NOW + 1),
        Action.nothing(Phase.RUNNING),
    )
    assert old_driver.nonces.restart == ack
    new_driver = DriverView(
        DriverState.RUNNING, "job-driver", action.intent.id if action.intent else "", NOW + 20
    )
    done = after(
        observe(
            raw_spec(restartNonce=5), st=st.evolve(intent=None), driver=new_driver, now=NOW + 30
        ),
        Action.nothing(Phase.RUNNING),
    )
    assert done.nonces.restart is not None
    assert done.nonces.restart.outcome is NonceOutcome.SUCCEEDED


def test_a_restart_that_ends_in_failure_fails_its_nonce() -> None:
    ack_st = running(nonces=status.JobStatus().nonces.with_ack(NonceField.RESTORE, _ack(2)))
    failed = after(
        observe(st=ack_st, now=NOW + 60),
        Action.fail(Reason.NO_USABLE_CHECKPOINT, "checkpoints exist but none can be restored"),
    )
    restore = failed.nonces.restore
    assert restore is not None and restore.outcome is NonceOutcome.FAILED
    assert "none can be restored" in restore.message


def _ack(value: int) -> NonceAck:
    return NonceAck(value, NonceOutcome.IN_PROGRESS, NOW, "restoring")


def test_a_restart_nonce_of_a_suspended_job_is_ignored_and_says_so() -> None:
    suspended = raw_spec(state="Suspended")
    st = running(phase=Phase.SUSPENDED, last_reconciled_spec=suspended)
    obs = observe(
        raw_spec(state="Suspended", restartNonce=6),
        st=st,
        driver=DriverView.absent(),
        control=ControlView(reachable=False),
    )
    action = decide(obs)
    new = after(obs, action)
    ack = new.nonces.restart
    assert ack is not None and ack.outcome is NonceOutcome.IGNORED and ack.value == 6
    assert "Suspended" in ack.message


def test_a_restore_nonce_without_restore_from_is_ignored() -> None:
    obs = observe(raw_spec(restoreNonce=3))
    new = after(obs, decide(obs))
    ack = new.nonces.restore
    assert ack is not None and ack.outcome is NonceOutcome.IGNORED
    assert ack.message == "spec.restoreFrom is not set: there is nothing to restore"


def test_nonces_present_at_creation_ask_for_nothing() -> None:
    obs = observe(
        raw_spec(restartNonce=1, savepointTriggerNonce=1),
        st=status.JobStatus(),
        driver=DriverView.absent(),
        control=ControlView(reachable=False),
    )
    action = decide(obs)
    assert action.kind is ActionKind.SCHEDULE and action.intent is not None
    assert action.intent.restore == intent.RestoreTarget.latest()
    assert after(obs, action).nonces == status.JobStatus().nonces
