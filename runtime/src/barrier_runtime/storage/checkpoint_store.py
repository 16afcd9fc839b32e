"""Checkpoints of one job in an object store: write, commit, find, verify, restore, retain.

The layout is in :mod:`~barrier_runtime.core.layout`. The life of a checkpoint:

1. subtasks upload state objects (:meth:`CheckpointStore.write_state`), each
   returning a :class:`StateHandle` with its size and sha256;
2. the coordinator merges the acknowledgements into a
   :class:`CheckpointMetadata` and calls :meth:`~CheckpointStore.commit`, which
   writes ``_metadata`` last, with a conditional create: of two coordinators
   committing the same id exactly one succeeds;
3. on restart :meth:`~CheckpointStore.select_restore_point` picks the newest
   checkpoint or savepoint whose objects all exist with the recorded size and
   checksum, falling back to older ones, and refuses to return "start empty"
   when checkpoints exist but none is usable;
4. :meth:`~CheckpointStore.apply_retention` deletes what no retained checkpoint
   references (see :mod:`~barrier_runtime.storage.retention`).

A checkpoint exists only if its ``_metadata`` exists and parses.

The store remembers its last scan, updated with what it commits and deletes
(:mod:`~barrier_runtime.storage.scan_memory`): a scan reads only the
``_metadata`` documents it has not seen, and :meth:`apply_retention`, which
the coordinator calls after every checkpoint, lists only when that memory is
older than ``relist_after`` seconds. A scan costs a listing per kind of
directory and a read per retained checkpoint; at one checkpoint a second that
was most of the storage requests of a checkpoint. The store is as
thread-safe as its object store.

>>> import tempfile
>>> from barrier_runtime.storage import object_store
>>> store = CheckpointStore(object_store.open_object_store(tempfile.mkdtemp()), "default/job")
>>> store.highest_checkpoint_id(), store.select_restore_point()
(0, None)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from barrier_runtime.core import layout, types
from barrier_runtime.core import metadata as md
from barrier_runtime.storage import (
    deleting,
    errors,
    id_mark,
    integrity,
    object_store,
    scan_memory,
    state_objects,
)

log = logging.getLogger(__name__)


RELIST_AFTER = 60.0
"""Seconds :meth:`CheckpointStore.apply_retention` plans from memory before it lists again."""


class CheckpointStore(state_objects.StateObjects, deleting.Deleting):
    """The checkpoints of the job at ``job_path`` (e.g. ``"default/my-job"``) in a store."""

    def __init__(
        self,
        store: object_store.ObjectStore,
        job_path: str,
        *,
        relist_after: float = RELIST_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._job = job_path.strip("/")
        if self._job:
            object_store.validate_key(self._job)
        self._checker = integrity.HandleChecker(store, self._abs)
        self._memory = scan_memory.ScanMemory(relist_after, clock)

    @property
    def object_store(self) -> object_store.ObjectStore:
        return self._store

    @property
    def job_path(self) -> str:
        return self._job

    def describe(self) -> str:
        """The job root for messages: ``s3://bucket/prefix at http://…, job default/x``."""
        return f"{self._store.describe()}, job {self._job or '/'}"

    # -- writing -------------------------------------------------------------

    def checkpoint_dir(self, checkpoint_id: int, kind: types.CheckpointKind) -> str:
        """``checkpoints/chk-0000000042`` or ``savepoints/sp-0000000042`` (job-relative)."""
        return layout.CheckpointRef(checkpoint_id, kind).directory

    def commit(self, metadata: md.CheckpointMetadata) -> str:
        """Make a checkpoint durable; returns its directory relative to the store root.

        1. check that every object it reuses from elsewhere (``shared/``, an
           older checkpoint's directory) still exists with its recorded size:
           retention may have deleted it meanwhile. Objects in its own
           directory were uploaded for it, each acknowledged only after the
           store confirmed the upload, and nothing deletes the directory of a
           checkpoint that can still commit, so they are not asked for again
           (a request per object per checkpoint; a restore checks them all);
        2. create ``_metadata`` with a conditional put (the commit point);
        3. if it already existed: the same bytes mean our own earlier attempt
           succeeded (return normally), other bytes mean another writer
           committed this id (:class:`CheckpointAlreadyExistsError`).
        """
        ref = layout.CheckpointRef.of(metadata)
        # Step 1
        own = f"{ref.directory}/"
        reused = [h for h in metadata.state_handles if not h.key.startswith(own)]
        problems = self._checker.stat_problems(reused)
        if problems:
            raise errors.CorruptCheckpointError(
                f"refusing to commit {ref} to {self.describe()}: {integrity.summary(problems)}"
            )
        # Step 2
        document = metadata.to_json()
        key = self._abs(ref.metadata_key)
        if self._store.put_if_absent(key, document):
            log.info("committed %s to %s", ref, self.describe())
            self._memory.changed(lambda inventory: inventory.with_committed(metadata))
            return self._abs(ref.directory)
        # Step 3
        try:
            existing = self._store.get(key)
        except errors.ObjectNotFoundError:
            existing = b""  # deleted meanwhile: still not ours
        if existing == document:
            self._memory.changed(lambda inventory: inventory.with_committed(metadata))
            return self._abs(ref.directory)
        raise errors.CheckpointAlreadyExistsError(
            f"{ref} was already committed to {self.describe()} by another writer: is a second "
            "coordinator running for this job?"
        )

    # -- reading -------------------------------------------------------------

    def scan(self) -> layout.Inventory:
        """List every checkpoint directory and parse every ``_metadata`` (each read once)."""
        ticket = self._memory.begin_scan()
        dirs = self._list_dirs()
        known = ticket.documents
        completed: list[md.CheckpointMetadata] = []
        rejected: list[layout.RejectedCheckpoint] = []
        for ref in sorted(dirs, key=layout.sort_key):
            if ref.metadata_key not in dirs[ref]:
                continue
            if ref in known:
                completed.append(known[ref])
                continue
            try:
                found = md.CheckpointMetadata.from_json(
                    self._store.get(self._abs(ref.metadata_key))
                )
            except errors.ObjectNotFoundError:
                continue  # deleted since the listing
            except md.CorruptMetadataError as exc:
                rejected.append(layout.RejectedCheckpoint(ref, str(exc)))
                continue
            if layout.CheckpointRef.of(found) != ref:
                reason = f"its _metadata describes {layout.CheckpointRef.of(found)}"
                rejected.append(layout.RejectedCheckpoint(ref, reason))
                continue
            completed.append(found)
        for bad in rejected:
            log.warning("ignoring %s in %s: %s", bad.ref, self.describe(), bad.reason)
        inventory = layout.Inventory(dirs, tuple(completed), tuple(rejected))
        self._memory.adopt(ticket, inventory)
        return inventory

    def list_completed(self) -> list[md.CheckpointMetadata]:
        """Completed checkpoints and savepoints, ascending by id (unreadable ones are logged)."""
        return list(self.scan().completed)

    def highest_checkpoint_id(self) -> int:
        """The highest id the job ever used: of any directory (torn, rejected and savepoints
        too) or recorded when a deletion took the highest away (:mod:`.id_mark`)."""
        in_dirs = max((r.checkpoint_id for r in self._list_dirs()), default=0)
        return max(in_dirs, id_mark.read(self._store, self._abs(id_mark.NAME)))

    def choose_restore_point(
        self,
        kinds: frozenset[types.CheckpointKind] | None = None,
        *,
        inventory: layout.Inventory | None = None,
    ) -> layout.RestoreChoice:
        """The newest snapshot (of ``kinds``, default both) whose objects verify, and what
        was rejected on the way.

        This is the one rule for "which checkpoint is usable" (size *and* sha256 of every
        referenced object, newest first, falling back to older ones); the driver's
        :meth:`select_restore_point` and the operator's catalog both call it.
        """
        inventory = self.scan() if inventory is None else inventory
        wanted = set(types.CheckpointKind) if kinds is None else set(kinds)
        rejected = [r for r in inventory.rejected if r.ref.kind in wanted]
        cache: dict[md.StateHandle, str | None] = {}
        candidates = [m for m in inventory.completed if m.kind in wanted]
        newest_first = sorted(
            candidates, key=lambda m: layout.sort_key(layout.CheckpointRef.of(m))
        )[::-1]
        for candidate in newest_first:
            problems = self.problems(candidate, cache)
            if not problems:
                return layout.RestoreChoice(candidate, tuple(rejected))
            rejected.append(
                layout.RejectedCheckpoint(
                    layout.CheckpointRef.of(candidate), integrity.summary(problems)
                )
            )
        return layout.RestoreChoice(None, tuple(rejected))

    def problems(
        self, metadata: md.CheckpointMetadata, cache: dict[md.StateHandle, str | None] | None = None
    ) -> list[str]:
        """What stops a restore of ``metadata``: every state object is read and checked
        against its size and sha256 (``cache`` spares re-reading objects shared by several)."""
        return self._checker.read_problems(metadata.state_handles, {} if cache is None else cache)

    def select_restore_point(
        self, *, allow_fresh_start: bool = False
    ) -> md.CheckpointMetadata | None:
        """The newest restorable checkpoint or savepoint; ``None`` if there has never been one.

        Raises :class:`NoUsableCheckpointError` naming every rejected checkpoint
        when some exist but none verifies, unless ``allow_fresh_start``.
        """
        choice = self.choose_restore_point()
        rejected = list(choice.rejected)
        if choice.chosen is not None:
            if rejected:
                log.warning(
                    "restoring %s from %s; skipped unusable: %s",
                    layout.CheckpointRef.of(choice.chosen),
                    self.describe(),
                    "; ".join(map(str, rejected)),
                )
            return choice.chosen
        if not rejected:
            return None
        rejected.sort(key=lambda r: layout.sort_key(r.ref), reverse=True)
        message = (
            f"no usable checkpoint in {self.describe()}: "
            + "; ".join(map(str, rejected))
            + " — refusing to start from empty state; repair or delete them, restore one "
            "explicitly, or allow a fresh start"
        )
        if allow_fresh_start:
            log.warning("%s; starting fresh as explicitly allowed", message)
            return None
        raise errors.NoUsableCheckpointError(message)

    def load(self, path_or_id: int | str) -> md.CheckpointMetadata:
        """The checkpoint a user named (``42``, ``chk-42``, a savepoint path), verified."""
        ref, found = self._resolve(path_or_id)
        problems = self.problems(found)
        if problems:
            raise errors.CorruptCheckpointError(
                f"{ref} in {self.describe()} cannot be restored: {integrity.summary(problems)}"
            )
        return found

    def find(self, path_or_id: int | str) -> md.CheckpointMetadata:
        """The metadata of the checkpoint a user named, without reading its state objects."""
        return self._resolve(path_or_id)[1]

    def missing_objects(self, metadata: md.CheckpointMetadata) -> list[str]:
        """Cheaper than :meth:`verify`: every state object exists with its recorded size."""
        return self._checker.stat_problems(metadata.state_handles)

    def verify(self, path_or_id: int | str) -> list[str]:
        """Every problem that would stop a restore of this checkpoint (empty if none)."""
        try:
            _ref, found = self._resolve(path_or_id)
        except (errors.CheckpointNotFoundError, errors.CorruptCheckpointError) as exc:
            return [str(exc)]
        return self.problems(found)

    # -- internals -----------------------------------------------------------

    def _abs(self, key: str) -> str:
        return f"{self._job}/{key}" if self._job else key

    def _rel(self, key: str) -> str:
        return key[len(self._job) + 1 :] if self._job else key

    def _list_dirs(self) -> dict[layout.CheckpointRef, tuple[str, ...]]:
        dirs: dict[layout.CheckpointRef, list[str]] = {}
        for top in layout.KIND_DIRS:
            for key in self._store.list(self._abs(f"{top}/")):
                member = layout.parse_member(self._rel(key))
                if member is not None:
                    dirs.setdefault(member[0], []).append(self._rel(key))
        return {ref: tuple(keys) for ref, keys in dirs.items()}

    def _reference(self, path_or_id: int | str) -> layout.Reference:
        reference = layout.parse_reference(path_or_id)
        if reference is None:
            raise errors.CheckpointNotFoundError(
                f"{path_or_id!r} names no checkpoint: give an id (42), chk-42, sp-42 or a "
                "checkpoint/savepoint path"
            )
        location = reference.location
        if (
            location
            and self._job
            and not (location == self._job or location.endswith(f"/{self._job}"))
        ):
            raise errors.CheckpointNotFoundError(
                f"{path_or_id!r} belongs to another job: this store is {self.describe()}"
            )
        return reference

    def _resolve(self, path_or_id: int | str) -> tuple[layout.CheckpointRef, md.CheckpointMetadata]:
        reference = self._reference(path_or_id)
        kinds = [reference.kind] if reference.kind else list(types.CheckpointKind)
        for kind in kinds:
            ref = layout.CheckpointRef(reference.checkpoint_id, kind)
            try:
                raw = self._store.get(self._abs(ref.metadata_key))
            except errors.ObjectNotFoundError:
                continue
            try:
                found = md.CheckpointMetadata.from_json(raw)
            except md.CorruptMetadataError as exc:
                raise errors.CorruptCheckpointError(
                    f"the _metadata of {ref} in {self.describe()} is unreadable: {exc}"
                ) from exc
            return ref, found
        raise errors.CheckpointNotFoundError(
            f"checkpoint {path_or_id} is not in {self.describe()} (no committed _metadata): "
            "name one that exists (cjob checkpoints list shows them)"
        )
