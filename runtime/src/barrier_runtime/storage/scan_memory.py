"""What a :class:`~.checkpoint_store.CheckpointStore` remembers of its job root.

The last scan's :class:`~barrier_runtime.core.layout.Inventory`, kept current
with the store's own commits and deletions, so that

* a scan reads only the ``_metadata`` documents it has not seen (a document
  is created once, conditionally, and never rewritten);
* retention after every checkpoint plans without listing, as long as the
  memory is younger than ``relist_after`` seconds.

What the memory cannot know: objects of checkpoints that never committed
(failed or aborted ones) uploaded since the listing, and changes made by other
writers. Hence it is used only by the job's own coordinator, and it ages out:
after ``relist_after`` seconds the next retention lists again, which bounds how
long a failed checkpoint's objects outlive it.

Invariants (each guarded by one lock, so the memory is thread-safe):

* every change is counted; a scan whose listing a change overtook is not
  adopted (it may miss a checkpoint committed meanwhile), the changed memory
  is kept instead;
* a failed deletion forgets everything: what is left is unknown until the
  next listing.

>>> memory = ScanMemory(relist_after=60.0, clock=lambda: 0.0)
>>> memory.recent() is None
True
>>> memory.adopt(memory.begin_scan(), layout.Inventory({}))
>>> memory.recent()
Inventory(dirs={}, completed=(), rejected=())
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping

from barrier_runtime.core import layout
from barrier_runtime.core import metadata as md

Change = Callable[[layout.Inventory], layout.Inventory]


@dataclasses.dataclass(frozen=True, slots=True)
class ScanTicket:
    """Taken before a listing: what was known then, and how many changes had been made."""

    changes: int
    listed_at: float
    documents: Mapping[layout.CheckpointRef, md.CheckpointMetadata]
    """Parsed ``_metadata`` documents the scan need not read again."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Remembered:
    inventory: layout.Inventory
    listed_at: float


class ScanMemory:
    """The last scan of one job root, updated with the store's own commits and deletions."""

    def __init__(self, relist_after: float, clock: Callable[[], float]) -> None:
        self._relist_after = relist_after
        self._clock = clock
        self._lock = threading.Lock()
        self._remembered: _Remembered | None = None
        self._changes = 0

    def begin_scan(self) -> ScanTicket:
        with self._lock:
            remembered, changes = self._remembered, self._changes
        documents = (
            {}
            if remembered is None
            else {layout.CheckpointRef.of(m): m for m in remembered.inventory.completed}
        )
        return ScanTicket(changes, self._clock(), documents)

    def adopt(self, ticket: ScanTicket, inventory: layout.Inventory) -> None:
        """Remember ``inventory`` unless a change was made since ``ticket`` was taken."""
        with self._lock:
            if self._changes == ticket.changes:
                self._remembered = _Remembered(inventory, ticket.listed_at)

    def recent(self) -> layout.Inventory | None:
        """The remembered inventory if it is younger than ``relist_after``, else ``None``."""
        with self._lock:
            remembered = self._remembered
        if remembered is None or self._clock() - remembered.listed_at >= self._relist_after:
            return None
        return remembered.inventory

    def changed(self, change: Change) -> None:
        """A commit or deletion of the store's own succeeded: apply it to the memory."""
        with self._lock:
            self._changes += 1
            if self._remembered is not None:
                inventory = change(self._remembered.inventory)
                self._remembered = _Remembered(inventory, self._remembered.listed_at)

    def forget(self) -> None:
        """Something may have changed in an unknown way (a deletion failed half-way)."""
        with self._lock:
            self._changes += 1
            self._remembered = None
