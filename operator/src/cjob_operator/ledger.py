"""What was asked and what came of it: savepoint history, nonce acknowledgements, rollout.

Pure (no I/O, no kopf, no kubernetes): :func:`cjob_operator.status.next_status` calls
it with what one reconcile observed, decided and did, and
:func:`cjob_operator.status.write_ahead` with what an intent records before acting.

1. Record what this reconcile did: a triggered savepoint (``InProgress``, or ``Failed``
   when the driver refused it), the final savepoint of a suspend or an upgrade,
   periodic savepoints deleted by retention (``Discarded``), and the nonce acted on
   (``InProgress``, or ``Failed`` when the trigger was refused).
2. Acknowledge a nonce the spec changed and that was accepted without an action of
   its own (``Ignored``, the message says why).
3. Settle what is in progress from what the driver (``GET /v1/checkpoints``) and the
   checkpoint store show; what shows nothing within ``checkpointing.timeout`` (plus
   :data:`SETTLE_MARGIN`) is ``Failed`` (a savepoint) or ``Unknown`` (a nonce).

The rollout (``status.rollout``, ``status.lastStableSpec``) is kept by
:mod:`cjob_operator.rollout`.
"""

from __future__ import annotations

import math

from barrier_runtime.core import types
from cjob_operator.model import acks, intent, observation, savepoints, status
from cjob_operator.model.action import Action, ActionKind
from cjob_operator.model.durations import format_duration
from cjob_operator.model.enums import (
    NonceField,
    NonceOutcome,
    Phase,
    RolloutState,
    SavepointKind,
    SavepointState,
)
from cjob_operator.model.observation import EntryStatus
from cjob_operator.model.outcome import Outcome
from cjob_operator.model.reasons import Reason

SETTLE_MARGIN = 60.0
"""Seconds beyond ``checkpointing.timeout`` before an unseen outcome is given up on."""

_STOP_KINDS = {
    intent.StopPurpose.SUSPEND: SavepointKind.SUSPEND,
    intent.StopPurpose.UPGRADE: SavepointKind.UPGRADE,
}


def _patience(obs: observation.Observation) -> float:
    timeout = obs.spec.checkpointing.timeout if obs.spec is not None else 600.0
    return timeout + SETTLE_MARGIN


def _control(obs: observation.Observation) -> observation.ControlView | None:
    return obs.control if obs.control is not None and obs.control.reachable else None


def _store(obs: observation.Observation) -> observation.StoreView | None:
    return obs.store if obs.store is not None and obs.store.readable else None


def _restarted_since(obs: observation.Observation, when: float) -> bool:
    started = obs.driver.started_at
    return started is not None and started > when


# -- the savepoint history --------------------------------------------------------------


def savepoints_after(
    obs: observation.Observation, action: Action, outcome: Outcome
) -> savepoints.SavepointsStatus:
    """``status.savepoints`` after this reconcile (steps 1 and 3)."""
    sps = obs.status.savepoints
    if action.kind is ActionKind.TRIGGER and action.snapshot is types.CheckpointKind.SAVEPOINT:
        kind = action.savepoint_kind or SavepointKind.MANUAL
        sid = outcome.triggered_id
        if outcome.error is not None or sid is None:
            why = outcome.error or "the driver accepted the trigger but named no savepoint id"
            sps = sps.record(
                savepoints.SavepointRecord(kind, SavepointState.FAILED, obs.now, sid, message=why)
            )
        else:
            sps = sps.record(
                savepoints.SavepointRecord(kind, SavepointState.IN_PROGRESS, obs.now, sid)
            )
        if kind is SavepointKind.PERIODIC:
            sps = sps.evolve(last_periodic_trigger_time=obs.now)
    stop, saved = action.intent, outcome.savepoint
    if saved is not None and stop is not None and stop.purpose in _STOP_KINDS:
        sps = sps.record(
            savepoints.SavepointRecord(
                _STOP_KINDS[stop.purpose],
                SavepointState.COMPLETED,
                obs.now,
                saved.id,
                saved.path,
                obs.now,
            )
        )
    for sid in outcome.discarded:
        found = sps.find(sid)
        if found is not None:
            sps = sps.record(
                found.settle(
                    SavepointState.DISCARDED,
                    obs.now,
                    message="deleted: beyond spec.savepoints.retained",
                )
            )
    for rec in sps.in_progress:
        settled = _settle_savepoint(obs, rec)
        if settled is not None:
            sps = sps.record(settled)
    return sps


def _settle_savepoint(
    obs: observation.Observation, rec: savepoints.SavepointRecord
) -> savepoints.SavepointRecord | None:
    if rec.id is None:
        return rec.settle(SavepointState.FAILED, obs.now, message="no savepoint id")
    store = _store(obs)
    found = store.latest_savepoint if store is not None else None
    if found is not None and found.id == rec.id:
        return rec.settle(SavepointState.COMPLETED, found.time or obs.now, path=found.path)
    control = _control(obs)
    entry = control.entry(rec.id) if control is not None else None
    if entry is not None and entry.status is EntryStatus.COMPLETED:
        return rec.settle(
            SavepointState.COMPLETED, entry.completion_time or obs.now, path=entry.path
        )
    if entry is not None and entry.status is EntryStatus.FAILED:
        return rec.settle(
            SavepointState.FAILED,
            obs.now,
            message=f"the driver reports it failed: {entry.failure_reason}",
        )
    if entry is None and _restarted_since(obs, rec.trigger_time):
        return rec.settle(
            SavepointState.FAILED,
            obs.now,
            message="the driver restarted before the savepoint completed",
        )
    if obs.now - rec.trigger_time > _patience(obs):
        return rec.settle(
            SavepointState.FAILED,
            obs.now,
            message=f"not seen completing within {format_duration(_patience(obs))}",
        )
    return None


# -- nonce acknowledgements ------------------------------------------------------------


def acknowledge(obs: observation.Observation, action: Action, outcome: Outcome) -> acks.NonceAcks:
    """``status.nonces`` with what this action acted on or accepted (steps 1 and 2)."""
    acked = obs.status.nonces
    sp = obs.spec
    if action.nonce is not None and sp is not None:
        value = sp.nonces.get(action.nonce)
        if value is not None:
            if outcome.error is not None and action.kind is ActionKind.TRIGGER:
                ack = acks.NonceAck(
                    value,
                    NonceOutcome.FAILED,
                    obs.now,
                    outcome.error,
                    outcome.triggered_id,
                    obs.now,
                )
            else:
                ack = acks.NonceAck(
                    value, NonceOutcome.IN_PROGRESS, obs.now, action.message, outcome.triggered_id
                )
            acked = acked.with_ack(action.nonce, ack)
    old, new = obs.status.last_reconciled_spec, action.reconciled_spec
    if old is None or new is None:
        return acked  # nonces set before the first deployment ask for nothing
    for field in NonceField:
        value = new.get(field.value)
        if field is action.nonce or value is None or str(value) == str(old.get(field.value)):
            continue
        acked = acked.with_ack(
            field,
            acks.NonceAck(
                value,
                NonceOutcome.IGNORED,
                obs.now,
                _ignored_because(obs, action, field),
                settled_time=obs.now,
            ),
        )
    return acked


def _ignored_because(obs: observation.Observation, action: Action, field: NonceField) -> str:
    if field is NonceField.RESTORE and obs.spec is not None and obs.spec.restore_from is None:
        return "spec.restoreFrom is not set: there is nothing to restore"
    phase = action.phase or obs.status.phase or Phase.PENDING
    detail = f": {action.message}" if action.message else ""
    return f"accepted without an action of its own (the job is {phase.value}){detail}"


def settle_nonces(
    obs: observation.Observation,
    acked: acks.NonceAcks,
    phase: Phase,
    pending: intent.Intent | None,
    error: str | None,
    history: savepoints.SavepointsStatus,
) -> acks.NonceAcks:
    """Step 3 for every acknowledgement still ``InProgress``."""
    for field, ack in list(acked.items()):
        if ack.outcome is not NonceOutcome.IN_PROGRESS:
            continue
        if field is NonceField.CHECKPOINT_TRIGGER:
            settled = _settle_checkpoint(obs, ack)
        elif field is NonceField.SAVEPOINT_TRIGGER:
            settled = _settle_savepoint_nonce(obs, ack, history)
        else:
            settled = _settle_deployment(obs, ack, phase, pending, error)
        if settled is not None:
            acked = acked.with_ack(field, settled)
    return acked


def _settle_checkpoint(obs: observation.Observation, ack: acks.NonceAck) -> acks.NonceAck | None:
    cid = ack.snapshot_id
    control = _control(obs)
    entry = control.entry(cid) if control is not None and cid is not None else None
    store = _store(obs)
    stored = store.latest_checkpoint if store is not None else None
    if (entry is not None and entry.status is EntryStatus.COMPLETED) or (
        stored is not None and cid is not None and stored.id == cid
    ):
        return ack.settle(NonceOutcome.SUCCEEDED, obs.now, f"checkpoint {cid} completed")
    if entry is not None and entry.status is EntryStatus.FAILED:
        return ack.settle(
            NonceOutcome.FAILED, obs.now, f"checkpoint {cid} failed: {entry.failure_reason}"
        )
    if entry is None and _restarted_since(obs, ack.time):
        return ack.settle(
            NonceOutcome.UNKNOWN,
            obs.now,
            f"the driver restarted before checkpoint {cid} was seen completing",
        )
    return _unknown_after_patience(obs, ack, f"checkpoint {cid}")


def _settle_savepoint_nonce(
    obs: observation.Observation, ack: acks.NonceAck, history: savepoints.SavepointsStatus
) -> acks.NonceAck | None:
    rec = history.find(ack.snapshot_id) if ack.snapshot_id is not None else None
    if rec is not None and rec.state is SavepointState.COMPLETED:
        return ack.settle(
            NonceOutcome.SUCCEEDED, obs.now, f"savepoint {rec.id} completed at {rec.path}"
        )
    if rec is not None and rec.state is SavepointState.FAILED:
        return ack.settle(NonceOutcome.FAILED, obs.now, f"savepoint {rec.id}: {rec.message}")
    return _unknown_after_patience(obs, ack, f"savepoint {ack.snapshot_id}")


def _unknown_after_patience(
    obs: observation.Observation, ack: acks.NonceAck, what: str
) -> acks.NonceAck | None:
    if obs.now - ack.time <= _patience(obs):
        return None
    return ack.settle(
        NonceOutcome.UNKNOWN,
        obs.now,
        f"no outcome of {what} seen within {format_duration(_patience(obs))}",
    )


def _settle_deployment(
    obs: observation.Observation,
    ack: acks.NonceAck,
    phase: Phase,
    pending: intent.Intent | None,
    error: str | None,
) -> acks.NonceAck | None:
    """A restart or restore succeeded once a driver started after it runs the job."""
    started = obs.driver.started_at  # whole seconds, as the kubelet reports it
    if (
        phase is Phase.RUNNING
        and pending is None
        and started is not None
        and started >= math.floor(ack.time)
    ):
        return ack.settle(NonceOutcome.SUCCEEDED, obs.now, "the job runs again")
    if phase is Phase.FAILED:
        return ack.settle(NonceOutcome.FAILED, obs.now, error or "the job failed")
    return None


# -- what to announce -------------------------------------------------------------------


def events(old: status.JobStatus, new: status.JobStatus) -> list[tuple[bool, Reason, str]]:
    """``(warning, reason, message)`` of every savepoint and nonce that settled."""
    found: list[tuple[bool, Reason, str]] = []
    for rec in new.savepoints.history:
        before = old.savepoints.find(rec.id) if rec.id is not None else None
        if (
            before is None
            or before.state is not SavepointState.IN_PROGRESS
            or rec.state is SavepointState.IN_PROGRESS
        ):
            continue
        what = f"{rec.kind.value.lower()} savepoint {rec.id}"
        if rec.state is SavepointState.COMPLETED:
            found.append((False, Reason.SAVEPOINT_COMPLETED, f"{what} completed at {rec.path}"))
        else:
            found.append((True, Reason.SAVEPOINT_FAILED, f"{what} failed: {rec.message}"))
    for field, ack in new.nonces.items():
        before_ack = old.nonces.get(field)
        if (
            not ack.outcome.settled
            or before_ack == ack
            or (
                before_ack is not None
                and before_ack.outcome is ack.outcome
                and str(before_ack.value) == str(ack.value)
            )
        ):
            continue
        warning = ack.outcome in (NonceOutcome.FAILED, NonceOutcome.UNKNOWN)
        found.append((warning, Reason.nonce(ack.outcome), f"{field} {ack.value}: {ack.message}"))
    became_stable = (
        new.rollout is not None
        and new.rollout.state is RolloutState.STABLE
        and (old.rollout is None or old.rollout.state is not RolloutState.STABLE)
    )
    if became_stable:
        found.append(
            (
                False,
                Reason.SPEC_STABLE,
                "the deployed spec ran with a completed checkpoint: "
                "recorded as status.lastStableSpec",
            )
        )
    return found
