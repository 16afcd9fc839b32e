"""Closed sets of the CheckpointedJob resource, spelled as stored in the CR."""

from __future__ import annotations

import enum


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
    RUNNING = "running"
    SUSPENDED = "suspended"


class UpgradeMode(enum.Enum):
    """How a spec change reaches a running job."""

    LAST_CHECKPOINT = "last-checkpoint"
    SAVEPOINT = "savepoint"
    STATELESS = "stateless"


class RestartType(enum.Enum):
    ALWAYS = "Always"
    ON_FAILURE = "OnFailure"
    NEVER = "Never"


class CheckpointingMode(enum.Enum):
    EXACTLY_ONCE = "ExactlyOnce"
    AT_LEAST_ONCE = "AtLeastOnce"


class SnapshotKind(enum.Enum):
    """What the control API is asked to take (``POST /v1/checkpoints``)."""

    CHECKPOINT = "checkpoint"
    SAVEPOINT = "savepoint"


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
