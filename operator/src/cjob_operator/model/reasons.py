"""Why: the closed set of machine reasons in actions, intents, status and Events.

Every reason :mod:`cjob_operator.decide` gives an :class:`~cjob_operator.model.action.Action`
or an :class:`~cjob_operator.model.intent.Intent`, and every Event reason the ledger and
the reconcile loop post, is a member of :class:`Reason`. Members are ``str``-valued
(``StrEnum``), so the text in ``status`` and in Events is the value, spelled in
UpperCamelCase as Kubernetes reasons are:

>>> Reason.JOB_FAILED == "JobFailed" and f"{Reason.JOB_FAILED}" == "JobFailed"
True
>>> Reason.nonce(NonceOutcome.IGNORED)
<Reason.NONCE_IGNORED: 'NonceIgnored'>
"""

from __future__ import annotations

import enum

from cjob_operator.model.enums import NonceOutcome


class Reason(enum.StrEnum):
    # -- why a deploy intent was recorded (``status.intent.reason``) --------------------
    CREATED = "Created"
    RESUMED = "Resumed"
    RESTORE_REQUESTED = "RestoreRequested"
    RESTART_REQUESTED = "RestartRequested"
    UPGRADE = "Upgrade"
    ROLLED_BACK = "RolledBack"
    DRIVER_DISAPPEARED = "DriverDisappeared"
    DRIVER_FAILED = "DriverFailed"
    DRIVER_EXITED = "DriverExited"
    """The driver's restarts (also ``status.restarts.lastReason``)."""
    # -- why a stop intent was recorded ------------------------------------------------
    SUSPEND = "Suspend"
    DELETE = "Delete"
    # -- what an action does or waits for ---------------------------------------------
    DEPLOYMENT_SETTLED = "DeploymentSettled"
    DRIVER_CREATED = "DriverCreated"
    DRIVER_STARTING = "DriverStarting"
    DRIVER_TERMINATING = "DriverTerminating"
    DRIVER_NOT_READY = "DriverNotReady"
    REPLACING_DRIVER = "ReplacingDriver"
    DELETING_DRIVER = "DeletingDriver"
    BACKING_OFF = "BackingOff"
    STORAGE_UNAVAILABLE = "StorageUnavailable"
    STOPPING_WITH_SAVEPOINT = "StoppingWithSavepoint"
    SAVEPOINT_RETRY = "SavepointRetry"
    NO_SAVEPOINT = "NoSavepoint"
    SAVEPOINT_TRIGGERED = "SavepointTriggered"
    MANUAL_CHECKPOINT_TRIGGERED = "ManualCheckpointTriggered"
    PERIODIC_SAVEPOINT_TRIGGERED = "PeriodicSavepointTriggered"
    SAVEPOINTS_DISCARDED = "SavepointsDiscarded"
    JOB_RESTARTED = "JobRestarted"
    """The driver restarted the job itself (counted in ``status.restarts``)."""
    SUSPENDED = "Suspended"
    FINISHED = "Finished"
    DELETED = "Deleted"
    # -- problems ------------------------------------------------------------------------
    INVALID_SPEC = "InvalidSpec"
    INVALID_JOB = "InvalidJob"
    """The driver exited with :data:`barrier_runtime.exit_codes.MISTAKE`."""
    JOB_FAILED = "JobFailed"
    """The driver exited with a final code: it already restarted as often as could help."""
    RESTART_LIMIT_REACHED = "RestartLimitReached"
    NO_USABLE_CHECKPOINT = "NoUsableCheckpoint"
    CHECKPOINTS_MISSING = "CheckpointsMissing"
    UPGRADE_REFUSED = "UpgradeRefused"
    ROLLBACK_IMPOSSIBLE = "RollbackImpossible"
    SAVEPOINT_FAILED = "SavepointFailed"
    # -- what settled (Events of the ledger and the reconcile loop) --------------------
    SAVEPOINT_COMPLETED = "SavepointCompleted"
    CHECKPOINT_FAILED = "CheckpointFailed"
    SPEC_STABLE = "SpecStable"
    ACTION_FAILED = "ActionFailed"
    """What the operator did failed (the Event says what; the next reconcile retries)."""
    NONCE_SUCCEEDED = "NonceSucceeded"
    NONCE_FAILED = "NonceFailed"
    NONCE_IGNORED = "NonceIgnored"
    NONCE_UNKNOWN = "NonceUnknown"

    @classmethod
    def nonce(cls, outcome: NonceOutcome) -> Reason:
        """The Event reason of a settled nonce (``Nonce{outcome}``)."""
        return cls(f"Nonce{outcome.value}")

    @classmethod
    def of_intent(cls, stored: object) -> Reason:
        """A stored intent's reason; one this version does not know reads as a restart
        (the phase an unknown deploy reason always meant)."""
        try:
            return cls(str(stored))
        except ValueError:
            return cls.RESTART_REQUESTED
