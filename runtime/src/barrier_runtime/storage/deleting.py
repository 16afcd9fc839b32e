"""The deleting half of :class:`~barrier_runtime.storage.checkpoint_store.CheckpointStore`:
retention, the driver's clean-up of what never committed, and deletion on request.

Every deletion is a :class:`~barrier_runtime.storage.retention.DiscardPlan` made
from one scan and carried out here, ``_metadata`` first (a checkpoint without its
commit record is never restored), then the objects no remaining checkpoint
references. A plan that takes the job's highest checkpoint id away records it first
(:mod:`.id_mark`), so that ids never repeat.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from barrier_runtime.core import layout, types
from barrier_runtime.storage import errors, id_mark, object_store, retention, scan_memory

log = logging.getLogger("barrier_runtime.storage.checkpoint_store")


class Deleting:
    """Deletions of a job's checkpoints; mixed into ``CheckpointStore``, whose store, job
    root, scan memory and reference parsing it uses."""

    _store: object_store.ObjectStore
    _memory: scan_memory.ScanMemory
    _abs: Callable[[str], str]
    _rel: Callable[[str], str]
    _reference: Callable[[int | str], layout.Reference]
    scan: Callable[[], layout.Inventory]
    describe: Callable[[], str]

    def apply_retention(self, retained: int) -> None:
        """Keep the newest ``retained`` checkpoints (and every savepoint); delete the rest.

        For the job's only writer, its coordinator: plans from the store's memory
        (see :mod:`.checkpoint_store`), listing only when that is older than
        ``relist_after`` seconds. Anyone else calls :meth:`discard_beyond`.
        """
        inventory = self._memory.recent()
        if inventory is None:
            inventory = self.scan()
        self._execute(retention.plan_retention(inventory, retained), inventory)

    def discard_beyond(self, retained: int) -> tuple[layout.CheckpointRef, ...]:
        """:meth:`apply_retention` from a fresh scan, returning the discarded directories."""
        inventory = self.scan()
        plan = retention.plan_retention(inventory, retained)
        self._execute(plan, inventory)
        return plan.discarded

    def discard_unfinished(self) -> tuple[layout.CheckpointRef, ...]:
        """Delete every checkpoint and savepoint that never committed, and the debris of
        writes that never finished (:meth:`~.object_store.ObjectStore.delete_incomplete`);
        returns the directories discarded.

        For the job's driver when none of its writers is left: after an attempt
        was torn down and its pending checkpoints aborted, and when the job
        ends. Then a directory without ``_metadata`` can no longer commit, and
        whatever an upload still finished into it after an earlier cleanup
        (retention of old torn directories runs while uploads may go on) is
        found here.
        """
        inventory = self.scan()
        plan = retention.plan_discard(inventory, inventory.torn)
        self._execute(plan, inventory)
        for top in (*layout.KIND_DIRS, layout.SHARED_DIR):
            self._store.delete_incomplete(self._abs(f"{top}/"))
        self._discard_unreferenced_shared(inventory)
        return plan.discarded

    def _discard_unreferenced_shared(self, inventory: layout.Inventory) -> None:
        """Delete the ``shared/`` objects no completed checkpoint or savepoint references.

        Incremental chains live as long as the attempt that writes them: once it is gone,
        a delta of a checkpoint that never completed, or a background base no checkpoint
        switched to, can never be referenced. Left alone while a ``_metadata`` cannot be
        read: what it references is unknown.
        """
        if inventory.rejected:
            log.warning(
                "not deleting unreferenced shared objects in %s: %d checkpoint(s) cannot be "
                "read, and they may reference them",
                self.describe(),
                len(inventory.rejected),
            )
            return
        referenced = {h.key for m in inventory.completed for h in m.state_handles}
        found = self._store.list(self._abs(f"{layout.SHARED_DIR}/"))
        orphans = [key for key in map(self._rel, found) if key not in referenced]
        if not orphans:
            return
        self._store.delete_many([self._abs(key) for key in orphans])
        log.info(
            "deleted %d shared object(s) no checkpoint references from %s",
            len(orphans),
            self.describe(),
        )

    def deletion_targets(self, path_or_id: int | str) -> tuple[layout.CheckpointRef, ...]:
        """The directories :meth:`delete_checkpoint` would delete (torn ones included)."""
        return self._targets(path_or_id, self.scan())

    def delete_checkpoint(self, path_or_id: int | str) -> None:
        """Delete one checkpoint or savepoint, keeping objects that others reference."""
        inventory = self.scan()
        targets = self._targets(path_or_id, inventory)
        self._execute(retention.plan_discard(inventory, list(targets)), inventory)

    def _targets(
        self, path_or_id: int | str, inventory: layout.Inventory
    ) -> tuple[layout.CheckpointRef, ...]:
        reference = self._reference(path_or_id)
        kinds = [reference.kind] if reference.kind else list(types.CheckpointKind)
        targets = tuple(
            ref
            for ref in (layout.CheckpointRef(reference.checkpoint_id, k) for k in kinds)
            if ref in inventory.dirs
        )
        if not targets:
            raise errors.CheckpointNotFoundError(
                f"checkpoint {path_or_id} is not in {self.describe()}: name one that exists "
                "(cjob checkpoints list shows them)"
            )
        return targets

    def _execute(self, plan: retention.DiscardPlan, inventory: layout.Inventory) -> None:
        if plan.empty:
            return
        highest = inventory.highest_id
        if any(ref.checkpoint_id == highest for ref in plan.discarded):
            # the highest id leaves with its directory: keep it, so ids never repeat
            id_mark.raise_to(self._store, self._abs(id_mark.NAME), highest)
        try:
            # metadata first: a checkpoint without its commit record is never restored
            self._store.delete_many([self._abs(k) for k in plan.metadata_keys])
            self._store.delete_many([self._abs(k) for k in plan.object_keys])
        except BaseException:
            self._memory.forget()  # what is left is unknown: list again next time
            raise
        self._memory.changed(
            lambda inventory: inventory.without(plan.metadata_keys + plan.object_keys)
        )
        log.info(
            "discarded %s from %s (%d objects)",
            ", ".join(map(str, plan.discarded)),
            self.describe(),
            len(plan.object_keys),
        )
