"""Channel state of unaligned checkpoints: in-flight records, their encoding, their replay.

The life of a subtask snapshot (copy, forward, upload, acknowledge) is
:mod:`barrier_runtime.task.subtask_checkpointing`'s; this module only holds
the values it persists as channel state and picks what a subtask replays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.channels import messages
from barrier_runtime.core import types
from barrier_runtime.task import channel_state

Payload = tuple[batch_mod.Record, ...] | messages.WatermarkMarker | messages.IdleMarker
"""What one entry replays: records, or an event-time marker that travelled between them."""
Captured = batch_mod.Batch | messages.WatermarkMarker | messages.IdleMarker
"""What one entry keeps until it is stored: a data batch as it travelled (Arrow stays
Arrow, so capturing costs no conversion), or an event-time marker."""

_NO_RECORDS = batch_mod.Batch.from_rows(())


@dataclass(frozen=True, slots=True, eq=False)
class InFlight:
    """Records owed to ``target_task``'s input ``side`` (subtask ``target_subtask`` at capture).

    Two entries are equal when they hold the same records (as rows) for the same place.
    """

    target_task: types.TaskId
    side: int
    target_subtask: int
    origin: str
    """``"input"``: received before the channel's barrier; ``"output"``: overtaken by it."""
    batch: batch_mod.Batch
    """The records, as the batch that carried them (batches are never modified)."""
    source_subtask: int = -1
    """The sending subtask (which channel of the gate), ``-1`` when not recorded."""
    marker: messages.WatermarkMarker | messages.IdleMarker | None = None
    """An event-time marker in place of records (``batch`` is then empty)."""

    @classmethod
    def of(
        cls,
        target_task: types.TaskId,
        side: int,
        target_subtask: int,
        origin: str,
        source_subtask: int,
        payload: Payload | Captured,
    ) -> InFlight:
        if isinstance(payload, messages.WatermarkMarker | messages.IdleMarker):
            return cls(
                target_task, side, target_subtask, origin, _NO_RECORDS, source_subtask, payload
            )
        batch = (
            payload if isinstance(payload, batch_mod.Batch) else batch_mod.Batch.from_rows(payload)
        )
        return cls(target_task, side, target_subtask, origin, batch, source_subtask)

    @property
    def rows(self) -> tuple[batch_mod.Record, ...]:
        return self.batch.rows()

    @property
    def payload(self) -> Payload:
        return self.rows if self.marker is None else self.marker

    def _key(self) -> tuple[object, ...]:
        return (
            self.target_task,
            self.side,
            self.target_subtask,
            self.origin,
            self.payload,
            self.source_subtask,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, InFlight) and self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]  # holds records, which are mutable dicts


def encode_channel_state(entries: list[InFlight]) -> bytes:
    """The stored form (:mod:`~barrier_runtime.task.channel_state`: Arrow IPC, no pickle)."""
    return channel_state.encode(
        (
            e.target_task,
            e.side,
            e.target_subtask,
            e.origin,
            e.batch if e.marker is None else e.marker,
            e.source_subtask,
        )
        for e in entries
    )


def decode_channel_state(blob: bytes) -> list[InFlight]:
    return [
        InFlight.of(types.TaskId(t), side, i, o, src, payload)
        for t, side, i, o, payload, src in channel_state.decode(blob)
    ]


def filter_for_subtask(
    entries: list[InFlight],
    task_id: types.TaskId,
    subtask: int,
    parallelism: int,
    owner_of: Callable[[int, batch_mod.Record], int | None],
    *,
    same_layout: bool = False,
) -> list[tuple[int, int, Payload]]:
    """What subtask ``subtask`` of ``task_id`` must replay, in replay order:
    ``(side, source subtask, records or marker)``.

    ``owner_of(side, record)`` gives the new owning subtask of a record on a keyed input
    (``None`` for forward inputs, which keep their old subtask modulo the new parallelism).
    Input-side captures come first, then overtaken output, which preserves per-channel order.
    Event-time markers are kept only with ``same_layout`` (same parallelism, so the same
    channels) and only for the subtask they were captured for.
    """
    ordered = [e for e in entries if e.origin == "input"] + [
        e for e in entries if e.origin == "output"
    ]
    out: list[tuple[int, int, Payload]] = []
    for e in ordered:
        if e.target_task != task_id:
            continue
        if e.marker is not None:
            if same_layout and e.target_subtask == subtask and e.source_subtask >= 0:
                out.append((e.side, e.source_subtask, e.marker))
            continue
        mine = tuple(r for r in e.rows if _owner(owner_of, e, r, parallelism) == subtask)
        if mine:
            out.append((e.side, e.source_subtask, mine))
    return out


def _owner(
    owner_of: Callable[[int, batch_mod.Record], int | None],
    entry: InFlight,
    record: batch_mod.Record,
    parallelism: int,
) -> int:
    owner = owner_of(entry.side, record)
    return entry.target_subtask % parallelism if owner is None else owner
