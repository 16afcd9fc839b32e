"""``status.savepoints``: the savepoint history (Flink operator's ``savepointInfo``).

Every savepoint the operator asks for or learns of is one :class:`SavepointRecord`:
manual ones (``savepointTriggerNonce``), periodic ones (``spec.savepoints.interval``)
and the final savepoints of upgrades and suspensions. A triggered savepoint is
``InProgress`` until the driver or the store shows it ``Completed`` (or ``Failed``);
periodic savepoints beyond ``spec.savepoints.retained`` become ``Discarded`` once
deleted from storage. The history keeps the newest :data:`HISTORY_LIMIT` entries plus
older periodic savepoints still in storage (so none is forgotten before retention
deletes it).

>>> h = SavepointsStatus().record(SavepointRecord(
...     SavepointKind.MANUAL, SavepointState.IN_PROGRESS, 10.0, id=7))
>>> h.record(h.history[0].settle(SavepointState.COMPLETED, 12.0, path="s3://b/sp-7")
...          ).history[0].state
<SavepointState.COMPLETED: 'Completed'>
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from cjob_operator.model import times
from cjob_operator.model.enums import SavepointKind, SavepointState

HISTORY_LIMIT = 10


@dataclass(frozen=True, slots=True)
class SavepointRecord:
    kind: SavepointKind
    state: SavepointState
    trigger_time: float
    id: int | None = None
    """``None`` only when the trigger itself was refused (no id was handed out)."""
    path: str | None = None
    completion_time: float | None = None
    message: str | None = None

    @property
    def live_periodic(self) -> bool:
        """A periodic savepoint that is (or may soon be) in storage."""
        return self.kind is SavepointKind.PERIODIC and self.state in (
            SavepointState.IN_PROGRESS,
            SavepointState.COMPLETED,
        )

    def settle(
        self,
        state: SavepointState,
        when: float,
        path: str | None = None,
        message: str | None = None,
    ) -> SavepointRecord:
        done = when if state is SavepointState.COMPLETED else self.completion_time
        return replace(
            self, state=state, completion_time=done, path=path or self.path, message=message
        )

    def for_storage(self) -> dict[str, Any]:
        doc = {
            "id": self.id,
            "path": self.path,
            "kind": self.kind.value,
            "state": self.state.value,
            "triggerTime": times.to_rfc3339(self.trigger_time),
            "completionTime": times.opt_rfc3339(self.completion_time),
            "message": self.message,
        }
        return {k: v for k, v in doc.items() if v is not None}

    @classmethod
    def from_storage(cls, raw: Mapping[str, Any]) -> SavepointRecord | None:
        try:
            sid = raw.get("id")
            return cls(
                kind=SavepointKind(raw["kind"]),
                state=SavepointState(raw["state"]),
                trigger_time=times.from_rfc3339(raw.get("triggerTime")) or 0.0,
                id=None if sid is None else int(sid),
                path=raw.get("path"),
                completion_time=times.from_rfc3339(raw.get("completionTime")),
                message=raw.get("message"),
            )
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True, slots=True)
class SavepointsStatus:
    history: tuple[SavepointRecord, ...] = ()
    """Oldest first."""
    last_periodic_trigger_time: float | None = None

    def find(self, sid: int) -> SavepointRecord | None:
        return next((r for r in self.history if r.id == sid), None)

    @property
    def in_progress(self) -> tuple[SavepointRecord, ...]:
        return tuple(r for r in self.history if r.state is SavepointState.IN_PROGRESS)

    def record(self, rec: SavepointRecord) -> SavepointsStatus:
        """Add ``rec``, or replace the entry with its id; then trim."""
        if rec.id is not None and self.find(rec.id) is not None:
            kept = tuple(rec if r.id == rec.id else r for r in self.history)
        else:
            kept = (*self.history, rec)
        return replace(self, history=_trim(kept))

    def evolve(self, **changes: Any) -> SavepointsStatus:
        return replace(self, **changes)

    def for_storage(self) -> dict[str, Any]:
        doc: dict[str, Any] = {}
        if self.history:
            doc["history"] = [r.for_storage() for r in self.history]
        if self.last_periodic_trigger_time is not None:
            doc["lastPeriodicTriggerTime"] = times.to_rfc3339(self.last_periodic_trigger_time)
        return doc

    @classmethod
    def from_storage(cls, raw: Mapping[str, Any] | None) -> SavepointsStatus:
        raw = raw or {}
        found = (
            SavepointRecord.from_storage(r)
            for r in raw.get("history") or ()
            if isinstance(r, Mapping)
        )
        return cls(
            history=tuple(r for r in found if r is not None),
            last_periodic_trigger_time=times.from_rfc3339(raw.get("lastPeriodicTriggerTime")),
        )


def _trim(history: tuple[SavepointRecord, ...]) -> tuple[SavepointRecord, ...]:
    """The newest :data:`HISTORY_LIMIT` entries and every older live periodic savepoint."""
    cut = len(history) - HISTORY_LIMIT
    return tuple(r for i, r in enumerate(history) if i >= cut or r.live_periodic)
