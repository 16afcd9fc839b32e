"""The write-ahead log entry kept in ``status.intent``.

Before the operator does anything that changes the running job (deploy a driver,
stop one with a final savepoint) it records *what it is about to do* in the
status. The next reconcile reads the intent back and either settles it (the
effect is observed) or carries it on (the operator died half-way, the old pod is
still terminating, the backoff has not expired). Intents are idempotent to replay.

Two operations exist:

``deploy``
    Create the driver (after deleting any driver of an older deployment), not
    before ``notBefore``, restoring from ``restore``. Settled once a driver pod
    annotated with the intent's ``id`` exists.
``stop``
    Stop the running driver with a final savepoint for ``purpose`` (suspend,
    upgrade, delete). ``done`` and ``savepoint`` record the outcome; the decision
    of what follows belongs to the next reconcile.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from cjob_operator.model import times
from cjob_operator.model.reasons import Reason


class IntentOp(enum.Enum):
    DEPLOY = "deploy"
    STOP = "stop"


class StopPurpose(enum.Enum):
    SUSPEND = "suspend"
    UPGRADE = "upgrade"
    DELETE = "delete"


class RestoreMode(enum.Enum):
    LATEST = "latest"
    """The newest usable checkpoint or savepoint in the store, resolved at deploy time."""
    CHECKPOINT = "checkpoint"
    """A checkpoint chosen by id."""
    PATH = "path"
    """A checkpoint or savepoint chosen by path."""
    NONE = "none"
    """Start from empty state (only when chosen explicitly)."""


@dataclass(frozen=True, slots=True)
class RestoreTarget:
    mode: RestoreMode
    checkpoint_id: int | None = None
    path: str | None = None

    @classmethod
    def latest(cls) -> RestoreTarget:
        return cls(RestoreMode.LATEST)

    @classmethod
    def none(cls) -> RestoreTarget:
        return cls(RestoreMode.NONE)

    @classmethod
    def checkpoint(cls, checkpoint_id: int) -> RestoreTarget:
        return cls(RestoreMode.CHECKPOINT, checkpoint_id=checkpoint_id)

    @classmethod
    def at_path(cls, path: str, checkpoint_id: int | None = None) -> RestoreTarget:
        return cls(RestoreMode.PATH, checkpoint_id=checkpoint_id, path=path)

    def for_storage(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"mode": self.mode.value}
        if self.checkpoint_id is not None:
            doc["checkpointId"] = self.checkpoint_id
        if self.path is not None:
            doc["path"] = self.path
        return doc

    @classmethod
    def from_storage(cls, raw: Mapping[str, Any] | None) -> RestoreTarget:
        if not raw:
            return cls.latest()
        cid = raw.get("checkpointId")
        return cls(
            RestoreMode(raw.get("mode", "latest")),
            None if cid is None else int(cid),
            raw.get("path"),
        )


@dataclass(frozen=True, slots=True)
class Intent:
    op: IntentOp
    id: str
    reason: Reason
    since: float
    restore: RestoreTarget = RestoreTarget(RestoreMode.LATEST)
    not_before: float | None = None
    purpose: StopPurpose | None = None
    done: bool = False
    savepoint_path: str | None = None
    savepoint_id: int | None = None
    attempts: int = 0
    retry_at: float | None = None
    error: str | None = None

    @classmethod
    def deploy(
        cls,
        id: str,
        reason: Reason,
        now: float,
        restore: RestoreTarget,
        not_before: float | None = None,
    ) -> Intent:
        return cls(IntentOp.DEPLOY, id, reason, now, restore=restore, not_before=not_before)

    @classmethod
    def stop(cls, id: str, reason: Reason, now: float, purpose: StopPurpose) -> Intent:
        return cls(IntentOp.STOP, id, reason, now, purpose=purpose)

    def evolve(self, **changes: Any) -> Intent:
        return replace(self, **changes)

    def for_storage(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "op": self.op.value,
            "id": self.id,
            "reason": self.reason.value,
            "since": times.to_rfc3339(self.since),
        }
        if self.op is IntentOp.DEPLOY:
            doc["restore"] = self.restore.for_storage()
            if self.not_before is not None:
                doc["notBefore"] = times.to_rfc3339(self.not_before)
        else:
            doc["purpose"] = self.purpose.value if self.purpose else None
            doc["done"] = self.done
            doc["attempts"] = self.attempts
            for key, value in (
                ("savepointPath", self.savepoint_path),
                ("savepointId", self.savepoint_id),
                ("retryAt", times.opt_rfc3339(self.retry_at)),
                ("error", self.error),
            ):
                if value is not None:
                    doc[key] = value
        return doc

    @classmethod
    def from_storage(cls, raw: Mapping[str, Any] | None) -> Intent | None:
        if not raw or "op" not in raw:
            return None
        try:
            purpose = raw.get("purpose")
            sid = raw.get("savepointId")
            return cls(
                op=IntentOp(raw["op"]),
                id=str(raw.get("id", "")),
                reason=Reason.of_intent(raw.get("reason")),
                since=times.from_rfc3339(raw.get("since")) or 0.0,
                restore=RestoreTarget.from_storage(raw.get("restore")),
                not_before=times.from_rfc3339(raw.get("notBefore")),
                purpose=StopPurpose(purpose) if purpose else None,
                done=bool(raw.get("done", False)),
                savepoint_path=raw.get("savepointPath"),
                savepoint_id=None if sid is None else int(sid),
                attempts=int(raw.get("attempts", 0)),
                retry_at=times.from_rfc3339(raw.get("retryAt")),
                error=raw.get("error"),
            )
        except (ValueError, TypeError):
            return None
