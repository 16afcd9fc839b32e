"""A deployed job that runs, or should: first deploys, nonces, upgrades, resumption.

Part of the pure decision (see :mod:`cjob_operator.decide`): no I/O, no kopf, no
kubernetes. Explicit instructions come first (``restoreNonce``, ``restartNonce``, an
upgrade, ``allowFreshStart`` after a failure); ``Failed`` and ``Finished`` stay so;
a suspended job whose driver is gone resumes; everything else is the driver's health
(:mod:`.health`).
"""

from __future__ import annotations

from cjob_operator.decide import health, lifecycle
from cjob_operator.model import changes, enums, intent, observation, spec, status
from cjob_operator.model.action import Action, ActionKind
from cjob_operator.model.enums import DriverState, NonceField, Phase
from cjob_operator.model.reasons import Reason


def running(obs: observation.Observation, sp: spec.JobSpec) -> Action:
    st = obs.status
    if st.last_reconciled_spec is None:
        target = _initial_target(sp)
        return Action.schedule(
            intent.Intent.deploy(lifecycle.intent_id(obs, "d"), Reason.CREATED, obs.now, target),
            Phase.DEPLOYING,
            "deploying the job",
            reconciled_spec=lifecycle.accepted(obs, sp),
        )
    diff = changes.classify(lifecycle.last(obs), sp.for_storage())
    if lifecycle.changed(obs, sp, NonceField.RESTORE) and sp.restore_from is not None:
        target = _initial_target(sp)
        return Action.schedule(
            intent.Intent.deploy(
                lifecycle.intent_id(obs, "d"), Reason.RESTORE_REQUESTED, obs.now, target
            ),
            Phase.DEPLOYING,
            f"restoring the job from {_describe(target)} as requested",
            reconciled_spec=lifecycle.accepted(obs, sp),
            restarts=_fresh_budget(st),
            nonce=NonceField.RESTORE,
        )
    if lifecycle.changed(obs, sp, NonceField.RESTART):
        return _redeploy_latest(
            obs,
            sp,
            "restarting the job from the latest checkpoint as requested",
            nonce=NonceField.RESTART,
        )
    if diff.kind is enums.ChangeKind.UPGRADE:
        return _upgrade(obs, sp, diff)
    if (
        st.phase is Phase.FAILED
        and sp.allow_fresh_start
        and not lifecycle.last(obs).get("allowFreshStart")
    ):
        return _redeploy_latest(obs, sp, "allowFreshStart was set: deploying again")
    if st.phase in (Phase.FAILED, Phase.FINISHED):
        accepted = lifecycle.accepted(obs, sp) if diff.changed else None
        return Action.nothing(st.phase, reconciled_spec=accepted)
    if st.phase is Phase.SUSPENDED and obs.driver.state is DriverState.ABSENT:
        return _resume(obs, sp)
    return health.by_driver_state(obs, sp, diff)


def _initial_target(sp: spec.JobSpec) -> intent.RestoreTarget:
    rf = sp.restore_from
    if rf is not None and rf.path:
        return intent.RestoreTarget.at_path(rf.path, rf.checkpoint_id)
    if rf is not None and rf.checkpoint_id is not None:
        return intent.RestoreTarget.checkpoint(rf.checkpoint_id)
    return intent.RestoreTarget.latest()


def _describe(target: intent.RestoreTarget) -> str:
    if target.path:
        return target.path
    if target.checkpoint_id is not None:
        return f"checkpoint {target.checkpoint_id}"
    return "the latest checkpoint"


def _fresh_budget(st: status.JobStatus) -> status.RestartsStatus:
    return status.RestartsStatus(
        count=st.restarts.count,
        last_time=st.restarts.last_time,
        last_reason=st.restarts.last_reason,
    )


def _resume(obs: observation.Observation, sp: spec.JobSpec) -> Action:
    saved = obs.status.checkpoints.last_savepoint
    newest = obs.store.newest_usable if obs.store and obs.store.readable else None
    if saved is not None and (newest is None or saved.id is None or saved.id >= newest.id):
        target = intent.RestoreTarget.at_path(saved.path, saved.id)
    else:
        target = intent.RestoreTarget.latest()
    return Action.schedule(
        intent.Intent.deploy(lifecycle.intent_id(obs, "d"), Reason.RESUMED, obs.now, target),
        Phase.DEPLOYING,
        f"resuming the job from {_describe(target)}",
        reconciled_spec=lifecycle.accepted(obs, sp),
    )


def _upgrade(obs: observation.Observation, sp: spec.JobSpec, diff: changes.SpecDiff) -> Action:
    fields = ", ".join(diff.upgrade_paths[:6])
    mode = sp.upgrade_mode
    running = obs.driver.state is DriverState.RUNNING
    if mode is enums.UpgradeMode.SAVEPOINT and running:
        stop = intent.Intent.stop(
            lifecycle.intent_id(obs, "s"), Reason.UPGRADE, obs.now, intent.StopPurpose.UPGRADE
        )
        return lifecycle.stop_not_done(obs, stop, Phase.UPGRADING)
    target = (
        intent.RestoreTarget.none()
        if mode is enums.UpgradeMode.STATELESS
        else intent.RestoreTarget.latest()
    )
    store = obs.store
    if (
        target.mode is intent.RestoreMode.LATEST
        and running
        and store is not None
        and store.readable
        and store.newest_usable is None
    ):
        refusal = lifecycle.fresh_start_refusal(obs, sp, store)
        if refusal is not None:
            return Action(
                ActionKind.REJECT,
                obs.status.phase,
                Reason.UPGRADE_REFUSED,
                f"not upgrading the running job: {refusal.message}",
                warning=True,
            )
    how = (
        "from empty state (upgradeMode stateless)"
        if target.mode is intent.RestoreMode.NONE
        else "from the latest checkpoint"
    )
    return Action.schedule(
        intent.Intent.deploy(lifecycle.intent_id(obs, "d"), Reason.UPGRADE, obs.now, target),
        Phase.UPGRADING,
        f"spec changed ({fields}): redeploying {how}",
        reconciled_spec=lifecycle.accepted(obs, sp),
    )


def _redeploy_latest(
    obs: observation.Observation,
    sp: spec.JobSpec,
    message: str,
    *,
    nonce: NonceField | None = None,
) -> Action:
    """Deploy again from the latest checkpoint, as the user asked, with a fresh restart budget."""
    return Action.schedule(
        intent.Intent.deploy(
            lifecycle.intent_id(obs, "d"),
            Reason.RESTART_REQUESTED,
            obs.now,
            intent.RestoreTarget.latest(),
        ),
        Phase.RESTARTING,
        message,
        reconciled_spec=lifecycle.accepted(obs, sp),
        restarts=_fresh_budget(obs.status),
        nonce=nonce,
    )
