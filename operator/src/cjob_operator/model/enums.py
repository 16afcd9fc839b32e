"""Closed sets of the CheckpointedJob resource, spelled as stored in the CR.

Every enum of the CRD is spelled in UpperCamelCase (Kubernetes API conventions).
v1alpha1 first spelled ``state`` and ``upgradeMode`` in lower case; those spellings
stay accepted for this alpha version as deprecated aliases and are normalised on
read:

>>> DesiredState("suspended") is DesiredState.SUSPENDED
True
>>> UpgradeMode("last-checkpoint")
<UpgradeMode.LAST_CHECKPOINT: 'LastCheckpoint'>
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

DEPRECATED_ALIASES: Mapping[str, Mapping[str, str]] = {
    "DesiredState": {"running": "Running", "suspended": "Suspended"},
    "UpgradeMode": {
        "last-checkpoint": "LastCheckpoint",
        "savepoint": "Savepoint",
        "stateless": "Stateless",
    },
}
"""Old spelling to canonical value, per enum (accepted in v1alpha1 only)."""


def _alias(cls: type[enum.Enum], value: object) -> enum.Enum | None:
    canonical = DEPRECATED_ALIASES.get(cls.__name__, {}).get(str(value))
    return None if canonical is None else cls(canonical)


class Phase(enum.Enum):
    """``status.phase``: derived on every reconcile from what was observed and done."""

    PENDING = "Pending"
    DEPLOYING = "Deploying"
    RUNNING = "Running"
    SUSPENDING = "Suspending"
    SUSPENDED = "Suspended"
    UPGRADING = "Upgrading"
    RESTARTING = "Restarting"
    FAILED = "Failed"
    DELETING = "Deleting"
    FINISHED = "Finished"


class DesiredState(enum.Enum):
    RUNNING = "Running"
    SUSPENDED = "Suspended"

    @classmethod
    def _missing_(cls, value: object) -> enum.Enum | None:
        return _alias(cls, value)


class UpgradeMode(enum.Enum):
    """How a spec change reaches a running job."""

    LAST_CHECKPOINT = "LastCheckpoint"
    SAVEPOINT = "Savepoint"
    STATELESS = "Stateless"

    @classmethod
    def _missing_(cls, value: object) -> enum.Enum | None:
        return _alias(cls, value)


class RestartType(enum.Enum):
    ALWAYS = "Always"
    ON_FAILURE = "OnFailure"
    NEVER = "Never"


class DriverState(enum.Enum):
    """The observed state of the driver pod."""

    ABSENT = "Absent"
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    TERMINATING = "Terminating"

    @property
    def terminal(self) -> bool:
        return self in (DriverState.SUCCEEDED, DriverState.FAILED)


class ChangeKind(enum.IntEnum):
    """What a changed spec field requires, least to most severe (Flink operator style)."""

    IGNORE = 0
    """Operator-side only (restart policy, checkpoint interval, …): no redeploy."""
    UPGRADE = 1
    """The driver must be redeployed, carrying state over per ``upgradeMode``."""


class SavepointKind(enum.Enum):
    """Why a savepoint in ``status.savepoints.history`` was taken."""

    MANUAL = "Manual"
    """``spec.savepointTriggerNonce``."""
    PERIODIC = "Periodic"
    """``spec.savepoints.interval``; the only kind ``spec.savepoints.retained`` deletes."""
    UPGRADE = "Upgrade"
    """The final savepoint of an upgrade in ``upgradeMode: Savepoint``."""
    SUSPEND = "Suspend"
    """The final savepoint of ``state: Suspended``."""


class SavepointState(enum.Enum):
    IN_PROGRESS = "InProgress"
    COMPLETED = "Completed"
    FAILED = "Failed"
    DISCARDED = "Discarded"
    """Deleted from storage by ``spec.savepoints.retained`` (periodic savepoints only)."""


class NonceField(enum.StrEnum):
    """A spec nonce: setting it to a new value asks the operator for something once.

    The value is the spec field, also the key of ``status.nonces``.
    """

    CHECKPOINT_TRIGGER = "checkpointTriggerNonce"
    SAVEPOINT_TRIGGER = "savepointTriggerNonce"
    RESTART = "restartNonce"
    RESTORE = "restoreNonce"

    @property
    def on_demand(self) -> bool:
        """A trigger nonce: it stays pending in ``lastReconciledSpec`` until acted on."""
        return self in (NonceField.CHECKPOINT_TRIGGER, NonceField.SAVEPOINT_TRIGGER)


class NonceOutcome(enum.Enum):
    """What came of a nonce the operator acted on (``status.nonces``)."""

    IN_PROGRESS = "InProgress"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    IGNORED = "Ignored"
    """Accepted without action (e.g. ``restartNonce`` of a suspended job)."""
    UNKNOWN = "Unknown"
    """The outcome was not seen in time (e.g. the driver's history lost it)."""

    @property
    def settled(self) -> bool:
        return self is not NonceOutcome.IN_PROGRESS


class RolloutState(enum.Enum):
    """Whether the deployed spec has proven itself (``status.rollout``)."""

    VERIFYING = "Verifying"
    """Deployed, not yet running with a completed checkpoint."""
    STABLE = "Stable"
    """Ran checkpoint-healthy: recorded as ``status.lastStableSpec``."""
    ROLLED_BACK = "RolledBack"
    """Did not become healthy within ``spec.rollback.timeout``: the last stable spec runs."""
    UNSTABLE = "Unstable"
    """Did not become healthy within ``spec.rollback.timeout`` and cannot be rolled back."""
