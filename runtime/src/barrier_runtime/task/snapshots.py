"""Assembling one subtask's part of a checkpoint: sync copy, async upload, channel state, ack.

Life of a subtask snapshot:

1. (task thread) operators serialise their state into a
   :class:`~barrier_runtime.task.operators.SnapshotBuilder` — the copy.
2. (task thread) the barrier is forwarded downstream; processing continues.
3. (upload pool) every blob is written to the checkpoint store.
4. (task thread, unaligned only) in-flight records are captured until every
   input channel delivered the barrier; then the channel state is uploaded.
5. When both uploads are done, the acknowledgement is sent — never earlier.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.core import metadata, types
from barrier_runtime.task import channel_state, operators


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


@dataclass
class PendingSnapshot:
    """One subtask's in-progress snapshot; thread-safe; acks exactly once."""

    barrier: types.Barrier
    task: metadata.TaskKey
    builder: operators.SnapshotBuilder
    started: float
    sync_duration: float
    alignment_duration: float
    awaiting_channel_state: bool
    send_ack: Callable[[metadata.TaskAcknowledgement], None]
    output_state: list[InFlight] = field(default_factory=list)
    input_state: list[InFlight] = field(default_factory=list)
    _handles: list[metadata.StateHandle] = field(default_factory=list)
    _uploads_left: int = 1
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _acked: bool = False

    @property
    def checkpoint_id(self) -> types.CheckpointId:
        return self.barrier.checkpoint_id

    def capture_input(self, side: int, rows: tuple[batch_mod.Record, ...]) -> None:
        self.input_state.append(InFlight(self.task.task_id, side, self.task.subtask, "input", rows))

    def channel_state(self) -> list[InFlight]:
        return [*self.input_state, *self.output_state]

    def add_upload(self) -> None:
        with self._lock:
            self._uploads_left += 1

    def upload_done(self, handles: list[metadata.StateHandle]) -> None:
        with self._lock:
            self._handles.extend(handles)
            self._uploads_left -= 1
            ready = self._uploads_left == 0 and not self._acked
            if ready:
                self._acked = True
        if ready:
            self.send_ack(self._ack())

    def _ack(self) -> metadata.TaskAcknowledgement:
        keyed_size = sum(h.size for h in self._handles if h.kind is not metadata.HandleKind.CHANNEL)
        channel_size = sum(h.size for h in self._handles if h.kind is metadata.HandleKind.CHANNEL)
        return metadata.TaskAcknowledgement(
            checkpoint_id=self.checkpoint_id,
            task=self.task,
            state_handles=tuple(self._handles),
            source_positions=self.builder.source_positions,
            sink_transactions=self.builder.sink_transactions,
            metrics=metadata.AckMetrics(
                sync_duration=self.sync_duration,
                async_duration=time.monotonic() - self.started,
                alignment_duration=self.alignment_duration,
                state_size=keyed_size,
                channel_state_size=channel_size,
            ),
        )


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
