"""Channel state of unaligned checkpoints: in-flight records, their encoding, their replay.

The life of a subtask snapshot (copy, forward, upload, acknowledge) is
:mod:`barrier_runtime.task.subtask_checkpointing`'s; this module only holds
the values it persists as channel state and picks what a subtask replays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.core import types
from barrier_runtime.task import channel_state


@dataclass(frozen=True, slots=True)
class InFlight:
    """Records owed to ``target_task``'s input ``side`` (subtask ``target_subtask`` at capture)."""

    target_task: types.TaskId
    side: int
    target_subtask: int
    origin: str
    """``"input"``: received before the channel's barrier; ``"output"``: overtaken by it."""
    rows: tuple[batch_mod.Record, ...]


def encode_channel_state(entries: list[InFlight]) -> bytes:
    """The stored form (:mod:`~barrier_runtime.task.channel_state`: Arrow IPC, no pickle)."""
    return channel_state.encode(
        (e.target_task, e.side, e.target_subtask, e.origin, e.rows) for e in entries
    )


def decode_channel_state(blob: bytes) -> list[InFlight]:
    return [InFlight(types.TaskId(t), s, i, o, r) for t, s, i, o, r in channel_state.decode(blob)]


def filter_for_subtask(
    entries: list[InFlight],
    task_id: types.TaskId,
    subtask: int,
    parallelism: int,
    owner_of: Callable[[int, batch_mod.Record], int | None],
) -> list[tuple[int, tuple[batch_mod.Record, ...]]]:
    """The in-flight records subtask ``subtask`` of ``task_id`` must replay, in replay order.

    ``owner_of(side, record)`` gives the new owning subtask of a record on a keyed input
    (``None`` for forward inputs, which keep their old subtask modulo the new parallelism).
    Input-side captures come first, then overtaken output, which preserves per-channel order.
    """
    ordered = [e for e in entries if e.origin == "input"] + [
        e for e in entries if e.origin == "output"
    ]
    out: list[tuple[int, tuple[Any, ...]]] = []
    for e in ordered:
        if e.target_task != task_id:
            continue
        mine = tuple(r for r in e.rows if _owner(owner_of, e, r, parallelism) == subtask)
        if mine:
            out.append((e.side, mine))
    return out


def _owner(
    owner_of: Callable[[int, batch_mod.Record], int | None],
    entry: InFlight,
    record: batch_mod.Record,
    parallelism: int,
) -> int:
    owner = owner_of(entry.side, record)
    return entry.target_subtask % parallelism if owner is None else owner
