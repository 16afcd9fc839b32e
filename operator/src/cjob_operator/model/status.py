"""``CheckpointedJob.status`` as frozen values with symmetric ``from_storage``/``for_storage``.

Times are epoch seconds in memory and RFC 3339 strings in storage. Unknown or
malformed stored values read as absent: a status is a cache of facts plus the
write-ahead ``intent``, never a reason to crash the reconcile loop.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from cjob_operator.model import acks, enums, savepoints, times
from cjob_operator.model import intent as intents

Raw = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str
    message: str
    last_transition_time: float
    observed_generation: int | None = None

    def for_storage(self) -> dict[str, Any]:
        return _compact(
            {
                "type": self.type,
                "status": self.status,
                "reason": self.reason,
                "message": self.message,
                "lastTransitionTime": times.to_rfc3339(self.last_transition_time),
                "observedGeneration": self.observed_generation,
            }
        )

    @classmethod
    def from_storage(cls, raw: Raw) -> Condition:
        return cls(
            type=str(raw.get("type", "")),
            status=str(raw.get("status", "Unknown")),
            reason=str(raw.get("reason", "")),
            message=str(raw.get("message", "")),
            last_transition_time=times.from_rfc3339(raw.get("lastTransitionTime")) or 0.0,
            observed_generation=_opt_int(raw.get("observedGeneration")),
        )


@dataclass(frozen=True, slots=True)
class DriverStatus:
    pod: str | None = None
    service: str | None = None
    start_time: float | None = None

    def for_storage(self) -> dict[str, Any]:
        return _compact(
            {
                "pod": self.pod,
                "service": self.service,
                "startTime": times.opt_rfc3339(self.start_time),
            }
        )

    @classmethod
    def from_storage(cls, raw: Raw) -> DriverStatus:
        return cls(raw.get("pod"), raw.get("service"), times.from_rfc3339(raw.get("startTime")))


@dataclass(frozen=True, slots=True)
class CompletedCheckpoint:
    id: int
    path: str | None = None
    time: float | None = None
    duration_seconds: float | None = None
    size_bytes: int | None = None
    trigger: str | None = None
    uploaded_bytes: int | None = None

    def for_storage(self) -> dict[str, Any]:
        return _compact(
            {
                "id": self.id,
                "path": self.path,
                "time": times.opt_rfc3339(self.time),
                "durationSeconds": self.duration_seconds,
                "sizeBytes": self.size_bytes,
                "uploadedBytes": self.uploaded_bytes,
                "trigger": self.trigger,
            }
        )

    @classmethod
    def from_storage(cls, raw: Raw | None) -> CompletedCheckpoint | None:
        if not raw or raw.get("id") is None:
            return None
        return cls(
            id=int(raw["id"]),
            path=raw.get("path"),
            time=times.from_rfc3339(raw.get("time")),
            duration_seconds=_opt_float(raw.get("durationSeconds")),
            size_bytes=None if raw.get("sizeBytes") is None else int(raw["sizeBytes"]),
            trigger=raw.get("trigger"),
            uploaded_bytes=None if raw.get("uploadedBytes") is None else int(raw["uploadedBytes"]),
        )


@dataclass(frozen=True, slots=True)
class FailedCheckpoint:
    id: int | None
    reason: str
    time: float | None = None

    def for_storage(self) -> dict[str, Any]:
        return _compact(
            {"id": self.id, "reason": self.reason, "time": times.opt_rfc3339(self.time)}
        )

    @classmethod
    def from_storage(cls, raw: Raw | None) -> FailedCheckpoint | None:
        if not raw:
            return None
        cid = raw.get("id")
        return cls(
            None if cid is None else int(cid),
            str(raw.get("reason", "")),
            times.from_rfc3339(raw.get("time")),
        )


@dataclass(frozen=True, slots=True)
class SavepointRef:
    id: int | None
    path: str
    time: float | None = None

    def for_storage(self) -> dict[str, Any]:
        return _compact({"id": self.id, "path": self.path, "time": times.opt_rfc3339(self.time)})

    @classmethod
    def from_storage(cls, raw: Raw | None) -> SavepointRef | None:
        if not raw or not raw.get("path"):
            return None
        sid = raw.get("id")
        return cls(
            None if sid is None else int(sid), str(raw["path"]), times.from_rfc3339(raw.get("time"))
        )


@dataclass(frozen=True, slots=True)
class CheckpointsStatus:
    last_completed: CompletedCheckpoint | None = None
    last_failed: FailedCheckpoint | None = None
    consecutive_failures: int = 0
    last_savepoint: SavepointRef | None = None
    shared_bytes: int | None = None
    """Incremental checkpoints' shared state referenced by the completed ones (bytes)."""

    def for_storage(self) -> dict[str, Any]:
        return _compact(
            {
                "lastCompleted": self.last_completed.for_storage() if self.last_completed else None,
                "lastFailed": self.last_failed.for_storage() if self.last_failed else None,
                "consecutiveFailures": self.consecutive_failures,
                "lastSavepoint": self.last_savepoint.for_storage() if self.last_savepoint else None,
                "sharedBytes": self.shared_bytes,
            }
        )

    @classmethod
    def from_storage(cls, raw: Raw) -> CheckpointsStatus:
        return cls(
            CompletedCheckpoint.from_storage(raw.get("lastCompleted")),
            FailedCheckpoint.from_storage(raw.get("lastFailed")),
            int(raw.get("consecutiveFailures") or 0),
            SavepointRef.from_storage(raw.get("lastSavepoint")),
            None if raw.get("sharedBytes") is None else int(raw["sharedBytes"]),
        )


@dataclass(frozen=True, slots=True)
class RestartsStatus:
    """Operator-initiated driver restarts.

    ``count`` is cumulative (the ``Restarts`` printer column); ``recent`` holds the
    times of the restarts inside the failure-rate window (``restartPolicy.window``).
    """

    count: int = 0
    last_time: float | None = None
    last_reason: str | None = None
    next_attempt_time: float | None = None
    recent: tuple[float, ...] = ()

    def for_storage(self) -> dict[str, Any]:
        return _compact(
            {
                "count": self.count,
                "lastTime": times.opt_rfc3339(self.last_time),
                "lastReason": self.last_reason,
                "nextAttemptTime": times.opt_rfc3339(self.next_attempt_time),
                "recent": [times.to_rfc3339(t) for t in self.recent] or None,
            }
        )

    @classmethod
    def from_storage(cls, raw: Raw) -> RestartsStatus:
        recent = tuple(t for t in (times.from_rfc3339(v) for v in raw.get("recent") or ()) if t)
        return cls(
            int(raw.get("count") or 0),
            times.from_rfc3339(raw.get("lastTime")),
            raw.get("lastReason"),
            times.from_rfc3339(raw.get("nextAttemptTime")),
            recent,
        )


@dataclass(frozen=True, slots=True)
class RolloutStatus:
    """``status.rollout``: has the deployed spec proven itself (see ``spec.rollback``)?"""

    state: enums.RolloutState
    since: float
    message: str = ""

    def for_storage(self) -> dict[str, Any]:
        return _compact(
            {
                "state": self.state.value,
                "since": times.to_rfc3339(self.since),
                "message": self.message or None,
            }
        )

    @classmethod
    def from_storage(cls, raw: Raw | None) -> RolloutStatus | None:
        if not raw:
            return None
        try:
            return cls(
                enums.RolloutState(raw.get("state")),
                times.from_rfc3339(raw.get("since")) or 0.0,
                str(raw.get("message") or ""),
            )
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class JobStatus:
    phase: enums.Phase | None = None
    conditions: tuple[Condition, ...] = ()
    observed_generation: int | None = None
    driver: DriverStatus = DriverStatus()
    checkpoints: CheckpointsStatus = CheckpointsStatus()
    restarts: RestartsStatus = RestartsStatus()
    last_reconciled_spec: Mapping[str, Any] | None = None
    intent: intents.Intent | None = None
    error: str | None = None
    job_state: str | None = None
    savepoints: savepoints.SavepointsStatus = field(default_factory=savepoints.SavepointsStatus)
    nonces: acks.NonceAcks = field(default_factory=acks.NonceAcks)
    last_stable_spec: Mapping[str, Any] | None = None
    """The spec of the last deployment that ran checkpoint-healthy (``spec.rollback``)."""
    rollout: RolloutStatus | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def condition(self, ctype: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == ctype), None)

    def evolve(self, **changes: Any) -> JobStatus:
        return replace(self, **changes)

    def for_storage(self) -> dict[str, Any]:
        return {
            "phase": self.phase.value if self.phase else None,
            "conditions": [c.for_storage() for c in self.conditions],
            "observedGeneration": self.observed_generation,
            "driver": self.driver.for_storage() or None,
            "checkpoints": self.checkpoints.for_storage() or None,
            "restarts": self.restarts.for_storage() or None,
            "lastReconciledSpec": _spec_for_storage(self.last_reconciled_spec),
            "intent": self.intent.for_storage() if self.intent else None,
            "error": self.error,
            "jobState": self.job_state,
            "savepoints": self.savepoints.for_storage() or None,
            "nonces": self.nonces.for_storage() or None,
            "lastStableSpec": _spec_for_storage(self.last_stable_spec),
            "rollout": self.rollout.for_storage() if self.rollout else None,
        }

    @classmethod
    def from_storage(cls, raw: Raw | None) -> JobStatus:
        raw = raw or {}
        phase_value = raw.get("phase")
        try:
            phase = enums.Phase(phase_value) if phase_value else None
        except ValueError:
            phase = None
        return cls(
            phase=phase,
            conditions=tuple(Condition.from_storage(c) for c in raw.get("conditions") or ()),
            observed_generation=_opt_int(raw.get("observedGeneration")),
            driver=DriverStatus.from_storage(raw.get("driver") or {}),
            checkpoints=CheckpointsStatus.from_storage(raw.get("checkpoints") or {}),
            restarts=RestartsStatus.from_storage(raw.get("restarts") or {}),
            last_reconciled_spec=_spec_from_storage(raw.get("lastReconciledSpec")),
            intent=intents.Intent.from_storage(raw.get("intent")),
            error=raw.get("error"),
            job_state=raw.get("jobState"),
            savepoints=savepoints.SavepointsStatus.from_storage(raw.get("savepoints")),
            nonces=acks.NonceAcks.from_storage(raw.get("nonces")),
            last_stable_spec=_spec_from_storage(raw.get("lastStableSpec")),
            rollout=RolloutStatus.from_storage(raw.get("rollout")),
            extra={k: v for k, v in raw.items() if k not in _KNOWN},
        )


_KNOWN = {
    "phase",
    "conditions",
    "observedGeneration",
    "driver",
    "checkpoints",
    "restarts",
    "lastReconciledSpec",
    "intent",
    "error",
    "jobState",
    "savepoints",
    "nonces",
    "lastStableSpec",
    "rollout",
}


def _spec_for_storage(value: Mapping[str, Any] | None) -> str | None:
    """Specs in the status are JSON strings (Flink operator style): never pruned, never
    validated against the spec schema."""
    if value is None:
        return None
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _spec_from_storage(value: Any) -> Mapping[str, Any] | None:
    """``lastReconciledSpec``/``lastStableSpec`` are stored as JSON strings."""
    if isinstance(value, Mapping):
        return dict(value)
    if not value:
        return None
    try:
        parsed = json.loads(value)
    except (TypeError, ValueError):
        return None
    return parsed if isinstance(parsed, dict) else None


def _compact(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if v is not None}


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)
