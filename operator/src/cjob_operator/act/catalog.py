"""Completed checkpoints and savepoints in the store, seen through the runtime's own code.

The operator and the driver must agree on which snapshot is usable, or a restart
loop follows (the operator names checkpoint N, the driver refuses it, again and
again). So this module holds no layout and no checks of its own: it opens the
job root with :func:`barrier_runtime.storage.open_object_store`, and asks
:meth:`barrier_runtime.storage.CheckpointStore.choose_restore_point` — the very
rule ``cjob driver`` restores with (``_metadata`` parses, every referenced object
exists with the recorded size *and* sha256, newest first, older ones as fallback).
Cleanup on deletion is the runtime's retention (:meth:`CheckpointStore.discard_beyond`);
periodic savepoints beyond ``spec.savepoints.retained`` go with the runtime's
:meth:`CheckpointStore.delete_checkpoint` (which keeps objects other snapshots share).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Protocol

from barrier_runtime.core import layout, types
from barrier_runtime.core import metadata as md
from barrier_runtime.storage import checkpoint_store, errors, object_store
from cjob_operator.model.observation import CheckpointInfo, StoreView, Unusable


class CheckpointCatalog(Protocol):
    """What the operator asks of the checkpoint store."""

    async def view(self) -> StoreView: ...
    async def cleanup(self, retained: int) -> list[str]: ...
    async def discard_savepoints(
        self, ids: tuple[int, ...]
    ) -> tuple[tuple[int, ...], str | None]: ...


class Catalog:
    """:class:`CheckpointCatalog` over a runtime :class:`CheckpointStore`.

    ``location`` is what paths are reported under (``s3://bucket/root`` or a
    ``file://`` URI of the job root); the driver accepts them as ``--restore-from``.
    """

    def __init__(self, store: checkpoint_store.CheckpointStore, location: str) -> None:
        self._store = store
        self._location = location.rstrip("/")

    @property
    def store(self) -> checkpoint_store.CheckpointStore:
        return self._store

    def _info(self, meta: md.CheckpointMetadata) -> CheckpointInfo:
        ref = layout.CheckpointRef.of(meta)
        return CheckpointInfo(
            id=int(meta.checkpoint_id),
            kind=meta.kind,
            path=f"{self._location}/{ref.directory}",
            time=meta.completion_time,
            duration_seconds=meta.completion_time - meta.trigger_time,
            size_bytes=meta.total_size,
            trigger="store",
            uploaded_bytes=layout.uploaded_size(meta),
        )

    def view_sync(self) -> StoreView:
        inventory = self._store.scan()
        found: dict[types.CheckpointKind, CheckpointInfo | None] = {}
        unusable: list[Unusable] = []
        for kind in (types.CheckpointKind.CHECKPOINT, types.CheckpointKind.SAVEPOINT):
            choice = self._store.choose_restore_point(frozenset({kind}), inventory=inventory)
            found[kind] = None if choice.chosen is None else self._info(choice.chosen)
            unusable += [
                Unusable(r.ref.checkpoint_id, r.ref.kind, r.reason) for r in choice.rejected
            ]
        unusable.sort(key=lambda u: u.id, reverse=True)
        shared = {
            h.key: h.size
            for m in inventory.completed
            for h in m.state_handles
            if h.key.startswith(f"{layout.SHARED_DIR}/")
        }
        return StoreView(
            readable=True,
            latest_checkpoint=found[types.CheckpointKind.CHECKPOINT],
            latest_savepoint=found[types.CheckpointKind.SAVEPOINT],
            unusable=tuple(unusable),
            shared_bytes=sum(shared.values()),
        )

    def latest_completed(self) -> CheckpointInfo | None:
        return self.view_sync().latest_checkpoint

    async def view(self) -> StoreView:
        try:
            return await asyncio.to_thread(self.view_sync)
        except Exception as exc:  # any store failure is reported, never raised
            return StoreView.unreadable(f"{type(exc).__name__}: {exc}")

    def cleanup_sync(self, retained: int) -> list[str]:
        """The runtime's retention: keep the newest ``retained`` checkpoints and every
        savepoint, delete older checkpoints and torn folders older than the newest
        completed one; unreadable checkpoints stay for inspection. Returns the
        removed folders (job-relative)."""
        return [ref.directory for ref in self._store.discard_beyond(retained)]

    async def cleanup(self, retained: int) -> list[str]:
        return await asyncio.to_thread(self.cleanup_sync, retained)

    def discard_savepoints_sync(self, ids: tuple[int, ...]) -> tuple[tuple[int, ...], str | None]:
        """Delete savepoints ``ids`` (never a checkpoint of the same id).

        Returns the ids that are gone (deleted now, or already missing) and the first
        error, if any; a failure leaves the rest for the next attempt.
        """
        gone: list[int] = []
        for sid in ids:
            try:
                savepoint = layout.CheckpointRef(sid, types.CheckpointKind.SAVEPOINT)
                self._store.delete_checkpoint(savepoint.directory)
            except errors.CheckpointNotFoundError:
                pass  # deleted before (e.g. by a reconcile whose status patch was lost)
            except Exception as exc:  # storage failures are reported, never raised
                return tuple(gone), f"could not delete savepoint {sid}: {type(exc).__name__}: {exc}"
            gone.append(sid)
        return tuple(gone), None

    async def discard_savepoints(self, ids: tuple[int, ...]) -> tuple[tuple[int, ...], str | None]:
        return await asyncio.to_thread(self.discard_savepoints_sync, ids)


def open_catalog(
    endpoint: str,
    bucket: str,
    root: str,
    access_key: str | None = None,
    secret_key: str | None = None,
) -> Catalog:
    """A catalog for a ``file://`` directory or an ``http(s)://`` S3 endpoint.

    The store is opened exactly as ``cjob driver`` opens it from ``job.json``
    (:func:`barrier_runtime.storage.object_store.store_url`).
    """
    url = object_store.store_url(endpoint, bucket)
    store = object_store.open_object_store(
        url, access_key=access_key, secret_key=secret_key, environ={}
    )
    root = root.strip("/")
    if endpoint.startswith("file://"):
        location = (Path(url) / root).as_uri() if root else Path(url).as_uri()
    else:
        location = f"s3://{bucket}/{root}" if root else f"s3://{bucket}"
    return Catalog(checkpoint_store.CheckpointStore(store, root), location)


def local_catalog(root: Path) -> Catalog:
    """A catalog over a local job root directory (tests and laptops)."""
    store = object_store.open_object_store(str(root))
    return Catalog(checkpoint_store.CheckpointStore(store, ""), root.as_uri())
