"""``status.nonces``: the acknowledgement of every on-demand nonce of the spec.

Changing ``checkpointTriggerNonce``, ``savepointTriggerNonce``, ``restartNonce`` or
``restoreNonce`` asks the operator for something once. Its acknowledgement says which
value was acted on, when, and what came of it: ``InProgress`` until the checkpoint
or savepoint completes (``snapshotId`` names it) or the restarted job runs again,
then ``Succeeded``, ``Failed``, ``Ignored`` (accepted without action, the message
says why) or ``Unknown`` (the outcome was not seen in time).

>>> ack = NonceAck(3, NonceOutcome.IN_PROGRESS, 5.0)
>>> acks = NonceAcks().with_ack(NonceField.RESTART, ack)
>>> NonceAcks.from_storage(acks.for_storage()) == acks
True
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from cjob_operator.model import times
from cjob_operator.model.enums import NonceField, NonceOutcome

NONCE_FIELDS: tuple[NonceField, ...] = tuple(NonceField)
"""The spec fields acknowledged, also the keys of ``status.nonces``."""


@dataclass(frozen=True, slots=True)
class NonceAck:
    value: int | str
    outcome: NonceOutcome
    time: float
    """When the operator acted on the value."""
    message: str = ""
    snapshot_id: int | None = None
    """The checkpoint or savepoint a trigger nonce asked for."""
    settled_time: float | None = None

    def settle(self, outcome: NonceOutcome, when: float, message: str) -> NonceAck:
        return replace(self, outcome=outcome, settled_time=when, message=message)

    def for_storage(self) -> dict[str, Any]:
        value = self.value
        if isinstance(value, str) and value.lstrip("-").isdigit():
            value = int(value)  # the CRD's nonces are integers
        doc = {
            "value": value,
            "outcome": self.outcome.value,
            "time": times.to_rfc3339(self.time),
            "message": self.message or None,
            "snapshotId": self.snapshot_id,
            "settledTime": times.opt_rfc3339(self.settled_time),
        }
        return {k: v for k, v in doc.items() if v is not None}

    @classmethod
    def from_storage(cls, raw: Mapping[str, Any] | None) -> NonceAck | None:
        if not raw or raw.get("value") is None:
            return None
        try:
            sid = raw.get("snapshotId")
            return cls(
                value=raw["value"],
                outcome=NonceOutcome(raw.get("outcome")),
                time=times.from_rfc3339(raw.get("time")) or 0.0,
                message=str(raw.get("message") or ""),
                snapshot_id=None if sid is None else int(sid),
                settled_time=times.from_rfc3339(raw.get("settledTime")),
            )
        except (TypeError, ValueError):
            return None


@dataclass(frozen=True, slots=True)
class NonceAcks:
    checkpoint_trigger: NonceAck | None = None
    savepoint_trigger: NonceAck | None = None
    restart: NonceAck | None = None
    restore: NonceAck | None = None

    def get(self, field: NonceField) -> NonceAck | None:
        found: NonceAck | None = getattr(self, field.name.lower())
        return found

    def with_ack(self, field: NonceField, ack: NonceAck) -> NonceAcks:
        return replace(self, **{field.name.lower(): ack})

    def items(self) -> Iterator[tuple[NonceField, NonceAck]]:
        for field in NONCE_FIELDS:
            ack = self.get(field)
            if ack is not None:
                yield field, ack

    def for_storage(self) -> dict[str, Any]:
        return {field.value: ack.for_storage() for field, ack in self.items()}

    @classmethod
    def from_storage(cls, raw: Mapping[str, Any] | None) -> NonceAcks:
        raw = raw or {}
        acks = cls()
        for field in NONCE_FIELDS:
            ack = NonceAck.from_storage(raw.get(field.value))
            if ack is not None:
                acks = acks.with_ack(field, ack)
        return acks
