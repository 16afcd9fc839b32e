"""The state objects of :class:`~barrier_runtime.storage.checkpoint_store.CheckpointStore`:
uploaded into a checkpoint's directory or, for incremental checkpoints, under ``shared/``
(immutable, named by content), and read back checked against their handles.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable

from barrier_runtime.core import layout, types
from barrier_runtime.core import metadata as md
from barrier_runtime.storage import errors, integrity, object_store


class StateObjects:
    """Writes and reads of state objects; mixed into ``CheckpointStore``, whose store and
    job root it uses."""

    _store: object_store.ObjectStore
    _abs: Callable[[str], str]
    describe: Callable[[], str]
    checkpoint_dir: Callable[[int, types.CheckpointKind], str]

    def write_state(
        self,
        checkpoint_id: int,
        kind: types.CheckpointKind,
        relpath: str,
        data: bytes,
        *,
        step_id: str,
        subtask: int,
        handle_kind: md.HandleKind,
        key_group_start: int | None = None,
        key_group_end: int | None = None,
    ) -> md.StateHandle:
        """Upload one state object into the checkpoint's directory and describe it."""
        object_store.validate_key(relpath)
        if relpath == layout.METADATA_NAME:
            raise ValueError(f"state object name {relpath!r} is reserved for the commit record")
        key = f"{self.checkpoint_dir(checkpoint_id, kind)}/{relpath}"
        self._store.put(self._abs(key), data)
        return integrity.make_handle(
            key, data, step_id, subtask, handle_kind, key_group_start, key_group_end
        )

    def write_shared(
        self,
        data: bytes,
        *,
        step_id: str,
        subtask: int,
        handle_kind: md.HandleKind,
        key_group_start: int | None = None,
        key_group_end: int | None = None,
        as_of: int | None = None,
        delta: bool = False,
    ) -> md.StateHandle:
        """Upload an immutable, content-addressed object under ``shared/`` (incremental state).

        With ``as_of`` (the checkpoint whose state it holds), its name starts with that id
        and the subtask: ``shared/{step}/{as_of:010d}-{subtask}-{sha256}``.
        """
        digest = hashlib.sha256(data).hexdigest()
        name = digest if as_of is None else f"{as_of:010d}-{subtask}-{digest}"
        key = f"{layout.SHARED_DIR}/{object_store.validate_key(step_id)}/{name}"
        self._store.put_if_absent(self._abs(key), data)
        handle = integrity.make_handle(
            key, data, step_id, subtask, handle_kind, key_group_start, key_group_end
        )
        return dataclasses.replace(handle, as_of=as_of, delta=delta)

    def read_state(self, handle: md.StateHandle) -> bytes:
        """The object's bytes, checked against the handle (:class:`CorruptCheckpointError`)."""
        try:
            data = self._store.get(self._abs(handle.key))
        except errors.ObjectNotFoundError as exc:
            raise errors.CorruptCheckpointError(
                f"state object {handle.key} is missing from {self.describe()}"
            ) from exc
        problem = integrity.check(handle, data)
        if problem:
            raise errors.CorruptCheckpointError(f"{problem} in {self.describe()}")
        return data
