"""Carrying on what was started: recorded intents, suspension, deletion, restore points.

Part of the pure decision (see :mod:`cjob_operator.decide`): no I/O, no kopf, no
kubernetes. A deploy intent is settled once a pod of its deployment exists; until
then the old driver is deleted, the backoff is waited out, and the restore point is
resolved from the store at the last moment (after the old driver is gone, so
nothing newer can appear). A stop intent takes a final savepoint (bounded retries
except for upgrades), then deletes the driver.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from barrier_runtime.core import layout, types
from cjob_operator.decide import rollback
from cjob_operator.model import enums, intent, observation, spec, times
from cjob_operator.model.action import Action, ActionKind, RestorePoint
from cjob_operator.model.durations import format_duration
from cjob_operator.model.enums import DriverState, Phase
from cjob_operator.model.reasons import Reason

MAX_STOP_ATTEMPTS = 3
MAX_STOP_RETRY_DELAY = 300.0

_STOP_PHASE = {
    intent.StopPurpose.SUSPEND: Phase.SUSPENDING,
    intent.StopPurpose.UPGRADE: Phase.UPGRADING,
}
_REASON_PHASE = {
    Reason.CREATED: Phase.DEPLOYING,
    Reason.RESUMED: Phase.DEPLOYING,
    Reason.RESTORE_REQUESTED: Phase.DEPLOYING,
    Reason.UPGRADE: Phase.UPGRADING,
    rollback.REASON: Phase.UPGRADING,
}


def last(obs: observation.Observation) -> Mapping[str, Any]:
    """The spec the running deployment was made from (``{}`` before the first deploy)."""
    return obs.status.last_reconciled_spec or {}


def changed(obs: observation.Observation, sp: spec.JobSpec, field: enums.NonceField) -> bool:
    """Whether nonce ``field`` is set to a value not handled yet."""
    return sp.nonces.changed_since(field, last(obs))


def accepted(obs: observation.Observation, sp: spec.JobSpec) -> dict[str, Any]:
    """The spec to record as reconciled; on-demand trigger nonces stay pending."""
    doc = sp.for_storage()
    if obs.status.last_reconciled_spec is not None:
        for field in (f for f in enums.NonceField if f.on_demand):
            old = last(obs).get(field.value)
            if old is None:
                doc.pop(field.value, None)
            else:
                doc[field.value] = old
    return doc


def intent_id(obs: observation.Observation, tag: str) -> str:
    """A deployment id that is unique per decision (it labels the driver pod)."""
    return f"{tag}-{obs.generation}-{int(obs.now * 1000):x}"


def driver_phase(obs: observation.Observation) -> Phase:
    d = obs.driver
    if d.state is DriverState.RUNNING and obs.control and obs.control.ready:
        return Phase.RUNNING
    if obs.status.phase in (Phase.RESTARTING, Phase.UPGRADING):
        return obs.status.phase
    return Phase.DEPLOYING


def carry_on(obs: observation.Observation, sp: spec.JobSpec, it: intent.Intent) -> Action:
    if it.op is intent.IntentOp.DEPLOY:
        return _carry_on_deploy(obs, sp, it)
    return _carry_on_stop(obs, sp, it)


def _deploy_phase(it: intent.Intent) -> Phase:
    return _REASON_PHASE.get(it.reason, Phase.RESTARTING)


def _carry_on_deploy(obs: observation.Observation, sp: spec.JobSpec, it: intent.Intent) -> Action:
    d = obs.driver
    phase = _deploy_phase(it)
    if d.state is not DriverState.ABSENT and d.deployment_id == it.id:
        settled = Phase.RUNNING if driver_phase(obs) is Phase.RUNNING else phase
        return Action.nothing(settled, Reason.DEPLOYMENT_SETTLED, clear_intent=True)
    if d.state is DriverState.TERMINATING:
        return Action.wait(phase, Reason.DRIVER_TERMINATING, "waiting for the old driver pod to go")
    if d.state is not DriverState.ABSENT:
        return Action.delete_driver(
            phase,
            Reason.REPLACING_DRIVER,
            f"deleting driver pod {d.pod_name} of an older deployment",
        )
    if it.not_before is not None and obs.now < it.not_before:
        return Action.wait(
            phase,
            Reason.BACKING_OFF,
            f"restarting after the backoff, at {times.to_rfc3339(it.not_before)}",
            until=it.not_before,
        )
    action = _resolve_and_deploy(obs, sp, it, phase)
    stable = rollback.deployed_spec(obs)
    if action.kind is ActionKind.DEPLOY and stable is not None:
        return dataclasses.replace(
            action, spec=stable, message=f"{action.message} with the last stable spec (rolled back)"
        )
    return action


def _resolve_and_deploy(
    obs: observation.Observation, sp: spec.JobSpec, it: intent.Intent, phase: Phase
) -> Action:
    target = it.restore
    if target.mode is intent.RestoreMode.NONE:
        return Action.deploy(phase, None, "starting from empty state (chosen explicitly)")
    if target.mode is intent.RestoreMode.CHECKPOINT and target.checkpoint_id is not None:
        point = RestorePoint(str(target.checkpoint_id), checkpoint_id=target.checkpoint_id)
        return Action.deploy(phase, point, f"restoring from checkpoint {target.checkpoint_id}")
    if target.mode is intent.RestoreMode.PATH and target.path:
        point = RestorePoint(
            target.path,
            checkpoint_id=target.checkpoint_id,
            path=target.path,
            kind=_kind_of(target.path),
        )
        return Action.deploy(phase, point, f"restoring from {target.path}")
    return _deploy_latest(obs, sp, phase)


def _deploy_latest(obs: observation.Observation, sp: spec.JobSpec, phase: Phase) -> Action:
    store = obs.store
    if store is None or not store.readable:
        why = store.error if store else "it was not read"
        return Action.wait(
            phase,
            Reason.STORAGE_UNAVAILABLE,
            f"cannot read the checkpoint store to choose a restore point: {why}",
            warning=True,
        )
    newest = store.newest_usable
    if newest is not None:
        if newest.kind is types.CheckpointKind.SAVEPOINT and newest.path:
            point = RestorePoint(newest.path, newest.id, newest.path, newest.kind)
        else:
            point = RestorePoint(str(newest.id), newest.id, newest.path, newest.kind)
        return Action.deploy(phase, point, f"restoring from {newest.kind.value} {newest.id}")
    refusal = fresh_start_refusal(obs, sp, store)
    if refusal is not None:
        return refusal
    return Action.deploy(phase, None, "no checkpoint exists yet: starting from empty state")


def fresh_start_refusal(
    obs: observation.Observation, sp: spec.JobSpec, store: observation.StoreView
) -> Action | None:
    """Refuse to start empty when state exists but cannot be used (unless allowed)."""
    if sp.allow_fresh_start:
        return None
    if store.unusable:
        ids = ", ".join(f"{u.kind.value} {u.id} ({u.reason})" for u in store.unusable[:5])
        return Action.fail(
            Reason.NO_USABLE_CHECKPOINT,
            f"checkpoints exist but none can be restored: {ids}; refusing to start from "
            "empty state (set spec.allowFreshStart: true to accept losing the state, or "
            "restore a chosen one with spec.restoreFrom and spec.restoreNonce)",
        )
    recorded = obs.status.checkpoints.last_completed
    if recorded is not None:
        return Action.fail(
            Reason.CHECKPOINTS_MISSING,
            f"status records completed checkpoint {recorded.id} but the checkpoint store has "
            "none; refusing to start from empty state (check spec.storage, or set "
            "spec.allowFreshStart: true)",
        )
    return None


def _carry_on_stop(obs: observation.Observation, sp: spec.JobSpec, it: intent.Intent) -> Action:
    d = obs.driver
    phase = _STOP_PHASE.get(it.purpose or intent.StopPurpose.DELETE, Phase.DELETING)
    if not it.done:
        return stop_not_done(obs, it, phase)
    if it.purpose is intent.StopPurpose.UPGRADE:
        target = (
            intent.RestoreTarget.at_path(it.savepoint_path, it.savepoint_id)
            if it.savepoint_path
            else intent.RestoreTarget.latest()
        )
        deploy = intent.Intent.deploy(intent_id(obs, "d"), Reason.UPGRADE, obs.now, target)
        return Action.schedule(
            deploy,
            Phase.UPGRADING,
            "redeploying the upgraded spec from the final savepoint"
            if it.savepoint_path
            else "redeploying the upgraded spec from the latest checkpoint",
            reconciled_spec=accepted(obs, sp),
        )
    if d.state is DriverState.TERMINATING:
        return Action.wait(phase, Reason.DRIVER_TERMINATING, "waiting for the driver pod to go")
    if d.state is not DriverState.ABSENT:
        return Action.delete_driver(
            phase, Reason.DELETING_DRIVER, f"deleting driver pod {d.pod_name}"
        )
    if it.purpose is intent.StopPurpose.SUSPEND:
        where = f" at {it.savepoint_path}" if it.savepoint_path else ""
        return Action.nothing(
            Phase.SUSPENDED,
            Reason.SUSPENDED,
            f"job suspended{where}",
            clear_intent=True,
            reconciled_spec=accepted(obs, sp),
            event=True,
        )
    return Action.nothing(phase, clear_intent=True)


def stop_not_done(obs: observation.Observation, it: intent.Intent, phase: Phase) -> Action:
    d = obs.driver
    ready = d.state is DriverState.RUNNING and obs.control is not None and obs.control.ready
    if d.state in (DriverState.ABSENT, DriverState.FAILED, DriverState.SUCCEEDED):
        return Action.record(
            it.evolve(done=True),
            phase,
            Reason.NO_SAVEPOINT,
            "the driver is not running, so no final savepoint can be taken; "
            "the latest checkpoint will be used",
            warning=True,
        )
    if it.attempts >= MAX_STOP_ATTEMPTS and it.purpose is not intent.StopPurpose.UPGRADE:
        return Action.record(
            it.evolve(done=True),
            phase,
            Reason.SAVEPOINT_FAILED,
            f"the final savepoint failed {it.attempts} times ({it.error}); "
            "stopping without it, the latest checkpoint will be used",
            warning=True,
        )
    if it.retry_at is not None and obs.now < it.retry_at:
        return Action.wait(
            phase, Reason.SAVEPOINT_RETRY, f"final savepoint failed: {it.error}", until=it.retry_at
        )
    if not ready:
        patience = obs.spec.checkpointing.timeout if obs.spec else 600.0
        if it.purpose is not intent.StopPurpose.UPGRADE and obs.now - it.since > patience:
            return Action.record(
                it.evolve(done=True),
                phase,
                Reason.NO_SAVEPOINT,
                "the driver did not become ready for a final savepoint within "
                f"{format_duration(patience)}; the latest checkpoint will be used",
                warning=True,
            )
        return Action.record(
            it,
            phase,
            Reason.DRIVER_NOT_READY,
            "waiting for the driver to take a final savepoint",
            event=False,
        )
    attempt = it.evolve(attempts=it.attempts + 1)
    return Action.stop(
        attempt,
        phase,
        f"taking a final savepoint to {it.purpose.value if it.purpose else 'stop'}",
        retry_at=obs.now + stop_retry_delay(obs.spec, attempt.attempts),
    )


def stop_retry_delay(sp: spec.JobSpec | None, attempt: int) -> float:
    """Seconds before the final savepoint is tried again after attempt ``attempt``
    (1-based) failed: doubling from the checkpoint interval (kept within 1 to 10 s),
    at most :data:`MAX_STOP_RETRY_DELAY`.

    >>> [stop_retry_delay(None, n) for n in (1, 2, 3, 6, 7)]
    [10.0, 20.0, 40.0, 300.0, 300.0]
    """
    interval = sp.checkpointing.interval if sp is not None else 10.0
    base = min(10.0, max(1.0, interval))
    return float(min(MAX_STOP_RETRY_DELAY, base * 2 ** max(0, attempt - 1)))


def suspend(obs: observation.Observation, sp: spec.JobSpec) -> Action:
    d = obs.driver
    if d.state is DriverState.ABSENT:
        return Action.nothing(
            Phase.SUSPENDED,
            reconciled_spec=accepted(obs, sp)
            if obs.status.last_reconciled_spec is not None
            else None,
        )
    if d.state is DriverState.RUNNING:
        stop = intent.Intent.stop(
            intent_id(obs, "s"), Reason.SUSPEND, obs.now, intent.StopPurpose.SUSPEND
        )
        return _carry_on_stop(obs, sp, stop)
    if d.state is DriverState.TERMINATING:
        return Action.wait(
            Phase.SUSPENDING, Reason.DRIVER_TERMINATING, "waiting for the driver to go"
        )
    return Action.delete_driver(
        Phase.SUSPENDING,
        Reason.DELETING_DRIVER,
        f"suspending: deleting driver pod {d.pod_name} "
        f"({d.state.value.lower()}, no savepoint possible)",
    )


def deleting(obs: observation.Observation) -> Action:
    it = obs.status.intent
    sp = obs.spec if obs.spec is not None else _deployed_spec(obs)
    d = obs.driver
    if it is not None and it.op is intent.IntentOp.STOP and not it.done:
        return stop_not_done(obs, it, Phase.DELETING)
    wants_savepoint = sp is not None and sp.upgrade_mode is enums.UpgradeMode.SAVEPOINT
    stopped = it is not None and it.op is intent.IntentOp.STOP and it.done
    if wants_savepoint and not stopped and d.state is DriverState.RUNNING:
        stop = intent.Intent.stop(
            intent_id(obs, "x"), Reason.DELETE, obs.now, intent.StopPurpose.DELETE
        )
        return stop_not_done(obs, stop, Phase.DELETING)
    if d.state is DriverState.TERMINATING:
        return Action.wait(
            Phase.DELETING, Reason.DRIVER_TERMINATING, "waiting for the driver to go"
        )
    if d.state is not DriverState.ABSENT:
        return Action.delete_driver(
            Phase.DELETING, Reason.DELETING_DRIVER, f"deleting driver pod {d.pod_name}"
        )
    return Action.release("driver deleted; checkpoints kept per retention")


def _deployed_spec(obs: observation.Observation) -> spec.JobSpec | None:
    """The spec the driver runs when the current one is refused (edited into an invalid
    one): its ``upgradeMode`` still decides whether deletion takes a final savepoint."""
    last = obs.status.last_reconciled_spec
    if last is None:
        return None
    try:
        return spec.JobSpec.from_storage(last)
    except spec.SpecError:
        return None


def _kind_of(path: str) -> types.CheckpointKind:
    """What a restore path names, as the runtime's layout reads it (checkpoint if unclear)."""
    reference = layout.parse_reference(path)
    if reference is None or reference.kind is None:
        return types.CheckpointKind.CHECKPOINT
    return reference.kind
