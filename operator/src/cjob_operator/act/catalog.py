"""Reading completed checkpoints and savepoints from the store (DESIGN §4.7).

Layout under the job root ``{bucket}/{prefix}/{namespace}/{job}/``::

    checkpoints/chk-0000000042/_metadata   ← the commit point, written last
    savepoints/sp-0000000043/_metadata

A snapshot exists only if its ``_metadata`` exists; it is *usable* if the document
parses and every state object it references exists with the recorded size. The
operator uses this view as the source of truth after restarts (the driver may be
gone). It is deliberately small: once ``barrier_runtime.storage`` offers
``CheckpointStore.select_restore_point``/``list_completed``, :class:`Catalog` can
delegate to it; until then it reads ``_metadata`` through the runtime's own parser.

Two object readers exist: S3/MinIO through the ``minio`` SDK, and a local
directory (``file://`` endpoints) for tests and laptops.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path
from typing import Protocol

from minio import Minio
from minio.deleteobjects import DeleteObject
from minio.error import S3Error

from barrier_runtime.checkpoint import metadata as md
from cjob_operator.model import enums
from cjob_operator.model.observation import CheckpointInfo, StoreView, Unusable

_DIRS = {enums.SnapshotKind.CHECKPOINT: ("checkpoints", "chk-"),
         enums.SnapshotKind.SAVEPOINT: ("savepoints", "sp-")}
_ID = re.compile(r"^(?:chk|sp)-(\d+)$")


def snapshot_dir(kind: enums.SnapshotKind, snapshot_id: int) -> str:
    folder, prefix = _DIRS[kind]
    return f"{folder}/{prefix}{snapshot_id:010d}"


class ObjectReader(Protocol):
    """The little the catalog needs from an object store, keys relative to the job root."""

    def uri(self, key: str) -> str: ...
    def list_dirs(self, prefix: str) -> list[str]: ...
    def read(self, key: str) -> bytes | None: ...
    def size(self, key: str) -> int | None: ...
    def delete_dir(self, prefix: str) -> None: ...


class LocalDirReader:
    """A job root on the local file system (``file://`` storage endpoints)."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def uri(self, key: str) -> str:
        return (self._root / key).as_uri()

    def list_dirs(self, prefix: str) -> list[str]:
        base = self._root / prefix
        return sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []

    def read(self, key: str) -> bytes | None:
        path = self._root / key
        return path.read_bytes() if path.is_file() else None

    def size(self, key: str) -> int | None:
        path = self._root / key
        return path.stat().st_size if path.is_file() else None

    def delete_dir(self, prefix: str) -> None:
        shutil.rmtree(self._root / prefix, ignore_errors=True)


class MinioReader:
    """A job root in an S3 bucket, through the ``minio`` SDK."""

    def __init__(self, client: object, bucket: str, root: str) -> None:
        self._client = client
        self._bucket = bucket
        self._root = root.strip("/")

    def _key(self, key: str) -> str:
        return f"{self._root}/{key}" if self._root else key

    def uri(self, key: str) -> str:
        return f"s3://{self._bucket}/{self._key(key)}"

    def list_dirs(self, prefix: str) -> list[str]:
        objects = self._client.list_objects(  # type: ignore[attr-defined]
            self._bucket, prefix=self._key(prefix).rstrip("/") + "/")
        return sorted(o.object_name.rstrip("/").rsplit("/", 1)[-1] for o in objects if o.is_dir)

    def read(self, key: str) -> bytes | None:
        try:
            response = self._client.get_object(self._bucket, self._key(key))  # type: ignore[attr-defined]
        except S3Error as exc:
            if exc.code in ("NoSuchKey", "NoSuchObject"):
                return None
            raise
        try:
            return bytes(response.read())
        finally:
            response.close()
            response.release_conn()

    def size(self, key: str) -> int | None:
        try:
            stat = self._client.stat_object(self._bucket, self._key(key))  # type: ignore[attr-defined]
        except S3Error:
            return None
        return int(stat.size)

    def delete_dir(self, prefix: str) -> None:
        objects = self._client.list_objects(  # type: ignore[attr-defined]
            self._bucket, prefix=self._key(prefix).rstrip("/") + "/", recursive=True)
        errors = self._client.remove_objects(  # type: ignore[attr-defined]
            self._bucket, (DeleteObject(o.object_name) for o in objects))
        for _ in errors:
            pass


class CheckpointCatalog(Protocol):
    """What the operator asks of the checkpoint store."""

    async def view(self) -> StoreView: ...
    async def cleanup(self, retained: int) -> list[str]: ...


class Catalog:
    """:class:`CheckpointCatalog` over an :class:`ObjectReader`."""

    def __init__(self, reader: ObjectReader) -> None:
        self._reader = reader

    def ids(self, kind: enums.SnapshotKind) -> list[int]:
        """Ids of every snapshot directory (committed or not), newest first."""
        folder, _ = _DIRS[kind]
        found = (_ID.match(name) for name in self._reader.list_dirs(folder))
        return sorted((int(m.group(1)) for m in found if m), reverse=True)

    def inspect(self, kind: enums.SnapshotKind, snapshot_id: int) -> CheckpointInfo | str | None:
        """The snapshot's info if usable, a reason if not, ``None`` if never committed."""
        folder = snapshot_dir(kind, snapshot_id)
        raw = self._reader.read(f"{folder}/_metadata")
        if raw is None:
            return None
        try:
            meta = md.CheckpointMetadata.from_json(raw)
        except md.CorruptMetadataError as exc:
            return f"_metadata does not parse: {exc}"
        for handle in meta.state_handles:
            size = self._reader.size(handle.key)
            if size is None:
                return f"state object {handle.key} is missing"
            if size != handle.size:
                return f"state object {handle.key} has {size} bytes, expected {handle.size}"
        return CheckpointInfo(
            id=int(meta.checkpoint_id), kind=kind, path=self._reader.uri(folder),
            time=meta.completion_time, duration_seconds=meta.completion_time - meta.trigger_time,
            size_bytes=meta.total_size, trigger="store",
        )

    def latest(self, kind: enums.SnapshotKind) -> tuple[CheckpointInfo | None, list[Unusable]]:
        unusable: list[Unusable] = []
        for snapshot_id in self.ids(kind):
            found = self.inspect(kind, snapshot_id)
            if isinstance(found, CheckpointInfo):
                return found, unusable
            if isinstance(found, str):
                unusable.append(Unusable(snapshot_id, kind, found))
        return None, unusable

    def latest_completed(self) -> CheckpointInfo | None:
        return self.latest(enums.SnapshotKind.CHECKPOINT)[0]

    def view_sync(self) -> StoreView:
        checkpoint, bad_checkpoints = self.latest(enums.SnapshotKind.CHECKPOINT)
        savepoint, bad_savepoints = self.latest(enums.SnapshotKind.SAVEPOINT)
        return StoreView(readable=True, latest_checkpoint=checkpoint, latest_savepoint=savepoint,
                         unusable=tuple(bad_checkpoints + bad_savepoints))

    async def view(self) -> StoreView:
        try:
            return await asyncio.to_thread(self.view_sync)
        except Exception as exc:  # any store failure is reported, never raised
            return StoreView.unreadable(f"{type(exc).__name__}: {exc}")

    def cleanup_sync(self, retained: int) -> list[str]:
        """Delete uncommitted checkpoint folders and usable ones beyond ``retained``.

        Savepoints, ``shared/`` state and unreadable checkpoints (kept for inspection)
        are never touched.
        """
        removed: list[str] = []
        kept = 0
        for snapshot_id in self.ids(enums.SnapshotKind.CHECKPOINT):
            folder = snapshot_dir(enums.SnapshotKind.CHECKPOINT, snapshot_id)
            found = self.inspect(enums.SnapshotKind.CHECKPOINT, snapshot_id)
            if isinstance(found, CheckpointInfo) and kept < retained:
                kept += 1
                continue
            if found is None or isinstance(found, CheckpointInfo):
                self._reader.delete_dir(folder)
                removed.append(folder)
        return removed

    async def cleanup(self, retained: int) -> list[str]:
        return await asyncio.to_thread(self.cleanup_sync, retained)


def open_catalog(endpoint: str, bucket: str, root: str, access_key: str | None = None,
                 secret_key: str | None = None) -> Catalog:
    """A catalog for a ``file://`` directory or an ``http(s)://`` S3 endpoint."""
    if endpoint.startswith("file://"):
        base = Path(endpoint[len("file://"):])
        return Catalog(LocalDirReader(base / bucket / root))
    secure = endpoint.startswith("https://")
    host = endpoint.split("://", 1)[-1].rstrip("/")
    client = Minio(host, access_key=access_key, secret_key=secret_key, secure=secure)
    return Catalog(MinioReader(client, bucket, root))


def write_metadata(root: Path, meta: md.CheckpointMetadata) -> Path:
    """Commit ``meta`` into a local job root (test and laptop helper)."""
    folder = root / snapshot_dir(
        enums.SnapshotKind.SAVEPOINT if meta.kind.value == "savepoint"
        else enums.SnapshotKind.CHECKPOINT, int(meta.checkpoint_id))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_metadata").write_bytes(meta.to_json())
    return folder
