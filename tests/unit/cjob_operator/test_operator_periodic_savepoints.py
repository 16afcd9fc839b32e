"""Periodic savepoints (``spec.savepoints.interval``) and their retention (``retained``)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from barrier_runtime.core import types
from cjob_operator import status as status_mod
from cjob_operator import validate
from cjob_operator.decide import decide
from cjob_operator.model import spec, status
from cjob_operator.model.action import ActionKind
from cjob_operator.model.enums import (
    DriverState,
    Phase,
    SavepointKind,
    SavepointState,
)
from cjob_operator.model.observation import ControlView, DriverView, Observation, StoreView
from cjob_operator.model.outcome import Outcome
from cjob_operator.model.savepoints import SavepointRecord, SavepointsStatus

NOW = 1_700_000_000.0
HOUR = 3600.0
STARTED = NOW - 10 * HOUR


def raw_spec(interval: str | None = "1h", retained: int = 2, **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "image": "registry.local/jobs:1",
        "pipeline": {"module": "jobs.wordcount"},
        "checkpointing": {"interval": "30s"},
        "storage": {"endpoint": "file:///s", "bucket": "ckpt"},
        "savepoints": {"retained": retained} | ({"interval": interval} if interval else {}),
    }
    return {**base, **overrides}


def rec(
    sid: int,
    kind: SavepointKind = SavepointKind.PERIODIC,
    state: SavepointState = SavepointState.COMPLETED,
) -> SavepointRecord:
    return SavepointRecord(
        kind,
        state,
        NOW - 5 * HOUR + sid,
        sid,
        f"file:///s/ckpt/ns/job/savepoints/sp-{sid:010d}",
        NOW - 5 * HOUR,
    )


def history(*records: SavepointRecord, last: float | None = None) -> SavepointsStatus:
    return SavepointsStatus(records, last_periodic_trigger_time=last)


def observe(
    spec_raw: dict[str, Any] | None = None,
    sps: SavepointsStatus | None = None,
    driver: DriverView | None = None,
    control: ControlView | None = None,
    now: float = NOW,
    **status_changes: Any,
) -> Observation:
    spec_raw = raw_spec() if spec_raw is None else spec_raw
    st = status.JobStatus(
        phase=Phase.RUNNING,
        observed_generation=1,
        last_reconciled_spec=spec_raw,
        savepoints=sps or SavepointsStatus(),
    ).evolve(**status_changes)
    return Observation(
        namespace="ns",
        name="job",
        uid="u",
        generation=1,
        deleting=False,
        spec=spec.JobSpec.from_storage(spec_raw),
        spec_error=None,
        status=st,
        driver=driver or DriverView(DriverState.RUNNING, "job-driver", "d-1", STARTED),
        control=ControlView(reachable=True, ready=True) if control is None else control,
        store=StoreView.empty(),
        now=now,
    )


# -- when a periodic savepoint is due ------------------------------------------------------


def test_without_an_interval_no_savepoint_is_ever_taken() -> None:
    assert decide(observe(raw_spec(interval=None))).kind is ActionKind.NOTHING


def test_the_first_periodic_savepoint_counts_from_the_drivers_start() -> None:
    young = DriverView(DriverState.RUNNING, "job-driver", "d-1", NOW - 59 * 60)
    assert decide(observe(driver=young)).kind is ActionKind.NOTHING
    action = decide(observe())
    assert action.kind is ActionKind.TRIGGER and action.snapshot is types.CheckpointKind.SAVEPOINT
    assert action.savepoint_kind is SavepointKind.PERIODIC and action.nonce is None
    assert action.reason == "PeriodicSavepointTriggered"


def test_a_triggered_periodic_savepoint_restarts_the_interval() -> None:
    obs = observe()
    st = status_mod.next_status(obs, decide(obs), Outcome(triggered_id=60))
    assert st.savepoints.last_periodic_trigger_time == NOW
    [entry] = st.savepoints.history
    assert (entry.id, entry.kind, entry.state) == (
        60,
        SavepointKind.PERIODIC,
        SavepointState.IN_PROGRESS,
    )
    completed = history(entry.settle(SavepointState.COMPLETED, NOW + 2), last=NOW)
    assert decide(observe(sps=completed, now=NOW + HOUR - 1)).kind is ActionKind.NOTHING
    assert decide(observe(sps=completed, now=NOW + HOUR)).kind is ActionKind.TRIGGER


def test_one_savepoint_at_a_time() -> None:
    busy = history(rec(61, SavepointKind.MANUAL, SavepointState.IN_PROGRESS), last=NOW - 2 * HOUR)
    assert decide(observe(sps=busy)).kind is ActionKind.NOTHING


def test_a_failed_periodic_savepoint_is_retried_after_a_minute() -> None:
    failed = SavepointRecord(
        SavepointKind.PERIODIC,
        SavepointState.FAILED,
        NOW - 30,
        message="409 a checkpoint is in progress",
    )
    sps = history(failed, last=NOW - 30)
    assert decide(observe(sps=sps)).kind is ActionKind.NOTHING
    assert decide(observe(sps=sps, now=NOW + 30)).kind is ActionKind.TRIGGER


def test_nonces_come_before_periodic_savepoints() -> None:
    action = decide(observe(raw_spec(savepointTriggerNonce=3), last_reconciled_spec=raw_spec()))
    assert action.nonce == "savepointTriggerNonce"
    assert action.savepoint_kind is SavepointKind.MANUAL


# -- retention -----------------------------------------------------------------------------


def test_only_periodic_savepoints_beyond_retained_are_deleted_oldest_first() -> None:
    sps = history(
        rec(10),
        rec(11, SavepointKind.MANUAL),
        rec(12),
        rec(13, SavepointKind.SUSPEND),
        rec(14),
        rec(15, SavepointKind.UPGRADE),
        rec(16),
        last=NOW,
    )
    action = decide(observe(sps=sps))
    assert action.kind is ActionKind.DISCARD
    assert [r.id for r in action.discard] == [10, 12]
    assert action.reason == "SavepointsDiscarded" and "10, 12" in action.message

    st = status_mod.next_status(observe(sps=sps), action, Outcome(discarded=(10, 12)))
    states = {r.id: r.state for r in st.savepoints.history}
    assert states[10] is states[12] is SavepointState.DISCARDED
    assert states[14] is states[16] is SavepointState.COMPLETED
    assert decide(observe(sps=st.savepoints)).kind is ActionKind.NOTHING


def test_a_partial_discard_keeps_the_rest_for_the_next_reconcile() -> None:
    sps = history(rec(10), rec(12), rec(14), rec(16), last=NOW)
    action = decide(observe(sps=sps))
    st = status_mod.next_status(
        observe(sps=sps), action, Outcome(discarded=(10,), error="could not delete savepoint 12")
    )
    assert st.error == "could not delete savepoint 12"
    again = decide(observe(sps=st.savepoints))
    assert [r.id for r in again.discard] == [12]


def test_a_savepoint_a_restore_may_need_is_never_deleted() -> None:
    sps = history(rec(10), rec(12), rec(14), rec(16), last=NOW)
    named = raw_spec(restoreFrom={"path": rec(10).path}, restoreNonce=1)
    action = decide(observe(named, sps=sps, last_reconciled_spec=named))
    assert [r.id for r in action.discard] == [12]
    by_id = raw_spec(
        restoreFrom={"path": "s3://ckpt/ns/job/savepoints/sp-0000000012/"}, restoreNonce=1
    )
    action = decide(observe(by_id, sps=sps, last_reconciled_spec=by_id))
    assert [r.id for r in action.discard] == [10]
    last = status.CheckpointsStatus(last_savepoint=status.SavepointRef(10, "elsewhere"))
    assert [r.id for r in decide(observe(sps=sps, checkpoints=last)).discard] == [12]


def test_retention_applies_without_an_interval_to_periodic_savepoints_taken_before() -> None:
    sps = history(rec(10), rec(12), rec(14), last=NOW)
    action = decide(observe(raw_spec(interval=None, retained=1), sps=sps))
    assert [r.id for r in action.discard] == [10, 12]


# -- the matrix ------------------------------------------------------------------------------

DRIVERS = {
    "running": DriverView(DriverState.RUNNING, "job-driver", "d-1", STARTED),
    "pending": DriverView(DriverState.PENDING, "job-driver", "d-1"),
    "failed": DriverView(
        DriverState.FAILED, "job-driver", "d-1", STARTED, "OOMKilled (exit code 137)", 137
    ),
    "absent": DriverView.absent(),
}
HISTORIES = {
    "empty": history(),
    "due": history(rec(10), last=NOW - 2 * HOUR),
    "in-progress": history(rec(10, state=SavepointState.IN_PROGRESS), last=NOW - 2 * HOUR),
    "crowded": history(
        *(rec(i, k) for i, k in zip(range(10, 20), itertools.cycle(SavepointKind), strict=False)),
        last=NOW,
    ),
}
SPECS = {
    "periodic": raw_spec(),
    "none": raw_spec(interval=None, retained=1),
    "suspended": raw_spec(state="Suspended"),
}


@pytest.mark.parametrize(
    ("driver", "hist", "spec_name", "ready"),
    list(itertools.product(DRIVERS, HISTORIES, SPECS, (True, False))),
)
def test_matrix_invariants(driver: str, hist: str, spec_name: str, ready: bool) -> None:
    obs = observe(
        SPECS[spec_name],
        sps=HISTORIES[hist],
        driver=DRIVERS[driver],
        control=ControlView(reachable=True, ready=ready),
    )
    action = decide(obs)
    if action.kind is ActionKind.TRIGGER:
        # only a ready, running job that is not being suspended, one savepoint at a time
        assert driver == "running" and ready and spec_name == "periodic"
        assert not HISTORIES[hist].in_progress
    if action.kind is ActionKind.DISCARD:
        assert driver == "running" and ready and spec_name != "suspended"
        assert all(
            r.kind is SavepointKind.PERIODIC and r.state is SavepointState.COMPLETED
            for r in action.discard
        )
        kept = [
            r
            for r in HISTORIES[hist].history
            if r.kind is SavepointKind.PERIODIC
            and r.state is SavepointState.COMPLETED
            and r not in action.discard
        ]
        assert len(kept) == obs.spec.savepoints.retained if obs.spec else False
        assert max(r.id or 0 for r in kept) > max(r.id or 0 for r in action.discard)


# -- validation -------------------------------------------------------------------------------


def test_validation_of_savepoints() -> None:
    assert validate.validate(spec.JobSpec.from_storage(raw_spec())) == []
    bad = spec.JobSpec.from_storage(raw_spec(interval="0s", retained=0))
    problems = validate.validate(bad)
    assert "spec.savepoints.interval must be positive" in problems
    assert "spec.savepoints.retained must be between 1 and 100" in problems
    with pytest.raises(spec.SpecError, match=r"spec\.savepoints\.interval"):
        spec.JobSpec.from_storage(raw_spec(interval="daily"))


def test_changing_the_savepoint_schedule_never_redeploys() -> None:
    old = raw_spec(interval="1h")
    action = decide(observe(raw_spec(interval="2h", retained=4), last_reconciled_spec=old))
    assert action.kind is not ActionKind.SCHEDULE
    assert action.reconciled_spec is not None
    assert action.reconciled_spec["savepoints"] == {"interval": "2h", "retained": 4}


def test_retention_comes_before_the_next_periodic_savepoint() -> None:
    """With a short interval a savepoint is due at almost every reconcile: deleting first
    keeps retention from being starved (one action deletes all that is beyond it)."""
    sps = history(rec(10), rec(12), rec(14), last=NOW - 2 * HOUR)
    first = decide(observe(sps=sps))
    assert first.kind is ActionKind.DISCARD and [r.id for r in first.discard] == [10]
    after = status_mod.next_status(observe(sps=sps), first, Outcome(discarded=(10,)))
    second = decide(observe(sps=after.savepoints))
    assert second.kind is ActionKind.TRIGGER and second.savepoint_kind is SavepointKind.PERIODIC
