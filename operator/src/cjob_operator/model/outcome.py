"""What acting on a decided action produced: the input of the next status."""

from __future__ import annotations

from dataclasses import dataclass

from cjob_operator.model import intent, status


@dataclass(frozen=True, slots=True)
class Outcome:
    """What acting on an action produced."""

    intent: intent.Intent | None = None
    savepoint: status.SavepointRef | None = None
    triggered_id: int | None = None
    error: str | None = None
    discarded: tuple[int, ...] = ()
    """Savepoints deleted from storage (or found already gone)."""
