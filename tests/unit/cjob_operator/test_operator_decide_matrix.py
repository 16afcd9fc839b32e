"""decide() over a matrix of (spec change x phase x driver state x checkpoint store)."""

from __future__ import annotations

import itertools

import pytest
from cjob_operator_testing.observations import (
    NOW,
    READY,
    STORES,
    failed_driver,
    observe,
    raw_spec,
    running_status,
)

from cjob_operator.decide import decide
from cjob_operator.model.action import Action, ActionKind
from cjob_operator.model.enums import DriverState, Phase
from cjob_operator.model.observation import (
    DriverView,
    Observation,
)

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
