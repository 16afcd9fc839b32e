"""The value object :func:`cjob_operator.decide.decide` returns: one action per reconcile.

Actions are built with named constructors (``Action.deploy(...)``,
``Action.schedule(...)``, ``Action.stop(...)``, …). Each carries the phase the job
is in once the action is taken, a machine ``reason`` (also the Event reason) and
one human ``message``; what else it needs is spelled out per constructor.
``intent`` is what to record in the status *before* acting (``None`` keeps the
stored intent unless ``clear_intent`` is set).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from barrier_runtime.core import types
from cjob_operator.model import enums, savepoints, status
from cjob_operator.model import intent as intents
from cjob_operator.model import spec as specs
from cjob_operator.model.reasons import Reason


class ActionKind(enum.Enum):
    NOTHING = "nothing"
    """Only refresh the status."""
    WAIT = "wait"
    """Something is under way (backoff, a pod starting or terminating)."""
    SCHEDULE = "schedule"
    """Record a deploy intent (create, restart, upgrade, resume, restore)."""
    DEPLOY = "deploy"
    """Create the driver resources for the current deploy intent."""
    DELETE_DRIVER = "delete-driver"
    """Delete the driver pod (an older deployment, or on suspend)."""
    TRIGGER = "trigger"
    """Ask the driver for a checkpoint or savepoint (``POST /v1/checkpoints``)."""
    STOP = "stop"
    """Stop the driver with a final savepoint (``POST /v1/stop``)."""
    RECORD = "record"
    """Only write an updated intent (a stop that could not take a savepoint)."""
    FAIL = "fail"
    """Give up: phase ``Failed`` with a clear message."""
    REJECT = "reject"
    """The spec is invalid: report it, change nothing."""
    RELEASE = "release"
    """Deletion is complete: remove children, clean storage, drop the finalizer."""
    DISCARD = "discard-savepoints"
    """Delete periodic savepoints beyond ``spec.savepoints.retained`` from storage."""


@dataclass(frozen=True, slots=True)
class RestorePoint:
    """What the new driver restores from: ``--restore-from <arg>``."""

    arg: str
    checkpoint_id: int | None = None
    path: str | None = None
    kind: types.CheckpointKind = types.CheckpointKind.CHECKPOINT


@dataclass(frozen=True, slots=True)
class Action:
    kind: ActionKind
    phase: enums.Phase | None
    reason: Reason | None = None
    message: str = ""
    intent: intents.Intent | None = None
    clear_intent: bool = False
    restore: RestorePoint | None = None
    snapshot: types.CheckpointKind | None = None
    until: float | None = None
    restarts: status.RestartsStatus | None = None
    reconciled_spec: Mapping[str, Any] | None = None
    warning: bool = False
    event: bool = True
    nonce: enums.NonceField | None = None
    """The spec nonce (``restartNonce``, …) this action acts on: acknowledged in status."""
    savepoint_kind: enums.SavepointKind | None = None
    """Why a triggered savepoint is taken (its ``status.savepoints.history`` kind)."""
    rollout: status.RolloutStatus | None = None
    """A new ``status.rollout``, recorded with the intent (write-ahead)."""
    spec: specs.JobSpec | None = None
    """What a deploy builds the driver from when not the current spec (a rollback)."""
    discard: tuple[savepoints.SavepointRecord, ...] = ()
    retry_at: float | None = None
    """A stop: when to try the final savepoint again should this attempt fail (the
    backoff is decided, not improvised by the acting layer)."""

    # -- named constructors ---------------------------------------------------------

    @classmethod
    def nothing(
        cls,
        phase: enums.Phase | None,
        reason: Reason | None = None,
        message: str = "",
        *,
        clear_intent: bool = False,
        reconciled_spec: Mapping[str, Any] | None = None,
        event: bool = False,
    ) -> Action:
        return cls(
            ActionKind.NOTHING,
            phase,
            reason,
            message,
            clear_intent=clear_intent,
            reconciled_spec=reconciled_spec,
            event=event,
        )

    @classmethod
    def wait(
        cls,
        phase: enums.Phase | None,
        reason: Reason,
        message: str,
        until: float | None = None,
        warning: bool = False,
    ) -> Action:
        """``warning`` waits are problems a user must see (in ``status.error``)."""
        return cls(
            ActionKind.WAIT, phase, reason, message, until=until, event=False, warning=warning
        )

    @classmethod
    def schedule(
        cls,
        new_intent: intents.Intent,
        phase: enums.Phase,
        message: str,
        *,
        restarts: status.RestartsStatus | None = None,
        reconciled_spec: Mapping[str, Any] | None = None,
        warning: bool = False,
        nonce: enums.NonceField | None = None,
        rollout: status.RolloutStatus | None = None,
    ) -> Action:
        return cls(
            ActionKind.SCHEDULE,
            phase,
            new_intent.reason,
            message,
            intent=new_intent,
            restarts=restarts,
            reconciled_spec=reconciled_spec,
            warning=warning,
            until=new_intent.not_before,
            nonce=nonce,
            rollout=rollout,
        )

    @classmethod
    def deploy(
        cls,
        phase: enums.Phase,
        restore: RestorePoint | None,
        message: str,
        spec: specs.JobSpec | None = None,
    ) -> Action:
        return cls(
            ActionKind.DEPLOY, phase, Reason.DRIVER_CREATED, message, restore=restore, spec=spec
        )

    @classmethod
    def delete_driver(
        cls,
        phase: enums.Phase | None,
        reason: Reason,
        message: str,
        new_intent: intents.Intent | None = None,
    ) -> Action:
        return cls(ActionKind.DELETE_DRIVER, phase, reason, message, intent=new_intent)

    @classmethod
    def trigger(
        cls,
        kind: types.CheckpointKind,
        reason: Reason,
        message: str,
        reconciled_spec: Mapping[str, Any] | None = None,
        *,
        nonce: enums.NonceField | None = None,
        savepoint_kind: enums.SavepointKind | None = None,
    ) -> Action:
        if kind is types.CheckpointKind.SAVEPOINT and savepoint_kind is None:
            savepoint_kind = enums.SavepointKind.MANUAL
        return cls(
            ActionKind.TRIGGER,
            enums.Phase.RUNNING,
            reason,
            message,
            snapshot=kind,
            reconciled_spec=reconciled_spec,
            nonce=nonce,
            savepoint_kind=savepoint_kind,
        )

    @classmethod
    def discard_savepoints(
        cls,
        records: tuple[savepoints.SavepointRecord, ...],
        message: str,
        reconciled_spec: Mapping[str, Any] | None = None,
    ) -> Action:
        return cls(
            ActionKind.DISCARD,
            enums.Phase.RUNNING,
            Reason.SAVEPOINTS_DISCARDED,
            message,
            discard=records,
            reconciled_spec=reconciled_spec,
        )

    @classmethod
    def stop(
        cls,
        stop_intent: intents.Intent,
        phase: enums.Phase,
        message: str,
        *,
        retry_at: float,
        reconciled_spec: Mapping[str, Any] | None = None,
    ) -> Action:
        return cls(
            ActionKind.STOP,
            phase,
            Reason.STOPPING_WITH_SAVEPOINT,
            message,
            intent=stop_intent,
            reconciled_spec=reconciled_spec,
            retry_at=retry_at,
        )

    @classmethod
    def record(
        cls,
        new_intent: intents.Intent,
        phase: enums.Phase | None,
        reason: Reason,
        message: str,
        warning: bool = False,
        event: bool = True,
    ) -> Action:
        return cls(
            ActionKind.RECORD,
            phase,
            reason,
            message,
            intent=new_intent,
            warning=warning,
            event=event,
        )

    @classmethod
    def fail(cls, reason: Reason, message: str) -> Action:
        return cls(
            ActionKind.FAIL, enums.Phase.FAILED, reason, message, clear_intent=True, warning=True
        )

    @classmethod
    def reject(cls, phase: enums.Phase | None, message: str) -> Action:
        return cls(ActionKind.REJECT, phase, Reason.INVALID_SPEC, message, warning=True)

    @classmethod
    def release(cls, message: str) -> Action:
        return cls(
            ActionKind.RELEASE, enums.Phase.DELETING, Reason.DELETED, message, clear_intent=True
        )
