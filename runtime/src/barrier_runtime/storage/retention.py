"""Which objects may be deleted when checkpoints are discarded (pure, no I/O).

Rules, in order of importance:

1. an object referenced by the metadata of any surviving checkpoint or any
   savepoint is never deleted — handles may point into other checkpoints'
   directories or into ``shared/``;
2. savepoints are never discarded by retention (only on explicit request);
3. retention keeps the newest ``retained`` completed checkpoints and discards
   older ones, plus torn checkpoint directories (no ``_metadata``) older than
   the newest completed checkpoint — newer torn ones may still be in progress;
4. a discarded checkpoint's ``_metadata`` is deleted before any of its
   objects, so a half-deleted checkpoint is never mistaken for a valid one;
5. checkpoints whose metadata cannot be read are left alone for a human.

Incremental checkpoints (``docs/incremental-checkpoints.md``) reuse ``shared/``
objects of earlier checkpoints of the same chain. A checkpoint in progress only
references objects that the newest completed checkpoint references too, or that
no completed checkpoint references yet (its own, and those of checkpoints that
did not complete): completing a newer checkpoint aborts the older pending ones,
so the newest completed one is never older than what a pending one builds on,
and retention always keeps it. Shared objects that no completed checkpoint
references are deleted by the driver's clean-up once no writer is left
(``discard_unfinished``), and the commit refuses a checkpoint whose reused
objects are gone.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from barrier_runtime.core import layout, types


@dataclass(frozen=True, slots=True)
class DiscardPlan:
    """Deletions to perform, job-relative: first ``metadata_keys``, then ``object_keys``."""

    discarded: tuple[layout.CheckpointRef, ...] = ()
    metadata_keys: tuple[str, ...] = ()
    object_keys: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.metadata_keys or self.object_keys)


def plan_retention(inventory: layout.Inventory, retained: int) -> DiscardPlan:
    """Discard all but the newest ``retained`` completed checkpoints, and old torn ones.

    >>> plan_retention(layout.Inventory(dirs={}), 1)
    DiscardPlan(discarded=(), metadata_keys=(), object_keys=())
    """
    if retained < 1:
        raise ValueError(f"retained must be at least 1, got {retained}")
    checkpoints = [
        layout.CheckpointRef.of(m)
        for m in inventory.completed
        if m.kind is types.CheckpointKind.CHECKPOINT
    ]
    checkpoints.sort(key=layout.sort_key)
    if not checkpoints:
        return DiscardPlan()
    newest = checkpoints[-1].checkpoint_id
    old_torn = [
        r
        for r in inventory.torn
        if r.kind is types.CheckpointKind.CHECKPOINT and r.checkpoint_id < newest
    ]
    return plan_discard(inventory, checkpoints[:-retained] + old_torn)


def plan_discard(
    inventory: layout.Inventory, targets: Collection[layout.CheckpointRef]
) -> DiscardPlan:
    """Delete ``targets`` (any kind) without touching what survivors reference."""
    chosen = set(targets)
    survivors = [m for m in inventory.completed if layout.CheckpointRef.of(m) not in chosen]
    keep = {h.key for m in survivors for h in m.state_handles}
    ordered = sorted(chosen, key=layout.sort_key)
    metadata_keys = [r.metadata_key for r in ordered if r.metadata_key in inventory.dirs.get(r, ())]
    candidates = {
        key for r in ordered for key in inventory.dirs.get(r, ()) if key != r.metadata_key
    }
    candidates.update(
        h.key
        for m in inventory.completed
        if layout.CheckpointRef.of(m) in chosen
        for h in m.state_handles
        if h.key.startswith(f"{layout.SHARED_DIR}/")
    )
    return DiscardPlan(
        discarded=tuple(ordered),
        metadata_keys=tuple(metadata_keys),
        object_keys=tuple(sorted(candidates - keep)),
    )
