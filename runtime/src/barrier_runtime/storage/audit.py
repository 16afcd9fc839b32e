"""The state of every checkpoint of a job, as ``cjob checkpoints list`` shows it.

Each checkpoint or savepoint directory is one of:

* ``ok`` — its ``_metadata`` parses and every state object it references exists
  with the recorded size and sha256: a restore can use it;
* ``corrupt`` — its ``_metadata`` does not parse (or describes another
  checkpoint), or a state object is missing or differs: a restore skips it;
* ``incomplete`` — no ``_metadata``: still being written, or abandoned by a
  job that ended before cleaning up.

The verdict is the restore's own (:meth:`~.checkpoint_store.CheckpointStore.problems`,
the rule :meth:`~.checkpoint_store.CheckpointStore.choose_restore_point` and
``cjob checkpoints verify`` apply), so what the list calls ``ok`` is exactly what
a job would restore.

>>> import tempfile
>>> from barrier_runtime.storage import checkpoint_store, object_store
>>> store = checkpoint_store.CheckpointStore(
...     object_store.open_object_store(tempfile.mkdtemp()), "ns/job")
>>> audit(store)
[]
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from barrier_runtime.core import layout
from barrier_runtime.core import metadata as md
from barrier_runtime.storage import checkpoint_store, integrity

INCOMPLETE_REASON = "no _metadata: still being written, or never committed"


class Status(enum.Enum):
    OK = "ok"
    CORRUPT = "corrupt"
    INCOMPLETE = "incomplete"


@dataclass(frozen=True, slots=True)
class Audited:
    """One checkpoint directory and what a restore would make of it."""

    ref: layout.CheckpointRef
    status: Status
    metadata: md.CheckpointMetadata | None = None
    """Its parsed ``_metadata`` (``None`` when corrupt there, or incomplete)."""
    problems: tuple[str, ...] = ()

    @property
    def shown(self) -> str:
        """``ok``, ``corrupt: <first problems>`` or ``incomplete``."""
        if self.status is Status.CORRUPT:
            return f"corrupt: {integrity.summary(self.problems, limit=1)}"
        return str(self.status.value)


def audit(store: checkpoint_store.CheckpointStore) -> list[Audited]:
    """Every checkpoint and savepoint directory of the job, ascending by id (reads them all)."""
    inventory = store.scan()
    cache: dict[md.StateHandle, str | None] = {}
    found = [_completed(store, m, cache) for m in inventory.completed]
    found += [Audited(r.ref, Status.CORRUPT, problems=(r.reason,)) for r in inventory.rejected]
    found += [Audited(r, Status.INCOMPLETE, problems=(INCOMPLETE_REASON,)) for r in inventory.torn]
    return sorted(found, key=lambda a: layout.sort_key(a.ref))


def _completed(
    store: checkpoint_store.CheckpointStore,
    meta: md.CheckpointMetadata,
    cache: dict[md.StateHandle, str | None],
) -> Audited:
    problems = tuple(store.problems(meta, cache))
    status = Status.CORRUPT if problems else Status.OK
    return Audited(layout.CheckpointRef.of(meta), status, meta, problems)
