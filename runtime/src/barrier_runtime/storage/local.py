"""An object store in a local directory (tests, laptops, shared file systems).

Each object is one file under the root; the key's ``/`` separators become
directories. Writes never expose a partial object:

1. the bytes go to a temporary file ``.{name}.{random}.tmp`` in the target
   directory and are fsynced;
2. ``put`` renames it over the target (``os.replace``, atomic on POSIX);
   ``put_if_absent`` hard-links it to the target (``os.link`` fails with
   ``EEXIST`` if the target exists, so of two racing writers — threads or
   processes — exactly one wins) and falls back to ``O_EXCL`` on file systems
   without hard links;
3. the directory is fsynced so the new name survives a crash.

Temporary files are invisible to ``list``; one outlives its write only when the
writer is killed mid-write, and ``delete_incomplete`` removes it. ``delete``
prunes directories that became empty; a writer that loses a race with the
pruning simply retries.
The store keeps no mutable state, so it is safe to share between threads.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pathlib
import stat as stat_module
import uuid
from collections.abc import Iterable, Iterator

from barrier_runtime.storage import errors, objects

_MKDIR_ATTEMPTS = 5
_INTERPRETED_BY_CALLERS = (
    FileExistsError,
    FileNotFoundError,
    NotADirectoryError,
    IsADirectoryError,
)
_NO_HARD_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK})


class LocalObjectStore:
    """Objects as files under ``root`` (an absolute path; created on first write).

    >>> import tempfile
    >>> store = LocalObjectStore(pathlib.Path(tempfile.mkdtemp()))
    >>> store.put("x/y", b"data")
    >>> store.stat("x/y"), store.stat("x/z")
    (ObjectInfo(size=4), None)
    """

    def __init__(self, root: pathlib.Path, *, fsync: bool = True) -> None:
        if not root.is_absolute():
            raise errors.InvalidStoreUrlError(f"local store root {root} must be an absolute path")
        self._root = root
        self._fsync = fsync

    @property
    def root(self) -> pathlib.Path:
        return self._root

    def describe(self) -> str:
        return self._root.as_uri()

    def describe_key(self, key: str) -> str:
        return (self._root / key).as_uri()

    def put(self, key: str, data: bytes) -> None:
        target = self._path(key)
        with self._translated("write", key):
            tmp = self._write_temp(target, data)
            try:
                os.replace(tmp, target)
            except BaseException:
                _unlink_quietly(tmp)
                raise
            self._sync_dir(target.parent)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        target = self._path(key)
        with self._translated("write", key):
            tmp = self._write_temp(target, data)
            try:
                os.link(tmp, target)
            except FileExistsError:
                return False
            except OSError as exc:
                if exc.errno not in _NO_HARD_LINKS:
                    raise
                return self._create_exclusive(target, data)
            finally:
                _unlink_quietly(tmp)
            self._sync_dir(target.parent)
            return True

    def get(self, key: str) -> bytes:
        path = self._path(key)
        try:
            with self._translated("read", key):
                return path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
            raise errors.ObjectNotFoundError(
                f"object {key} does not exist in {self.describe()}"
            ) from exc

    def stat(self, key: str) -> objects.ObjectInfo | None:
        path = self._path(key)
        try:
            with self._translated("inspect", key):
                st = path.stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat_module.S_ISREG(st.st_mode):
            return None
        return objects.ObjectInfo(size=st.st_size)

    def list(self, prefix: str) -> Iterator[str]:
        if prefix.strip("/"):
            objects.validate_key(prefix.rstrip("/"))
        head = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        base = self._root.joinpath(*head.split("/")) if head else self._root
        keys: list[str] = []
        with self._translated("list", prefix):
            for dirpath, _dirs, files in os.walk(base):
                rel = pathlib.Path(dirpath).relative_to(self._root).as_posix()
                for name in files:
                    key = name if rel == "." else f"{rel}/{name}"
                    if key.startswith(prefix) and not objects.is_temporary_name(name):
                        keys.append(key)
        return iter(sorted(keys))

    def delete(self, key: str) -> None:
        path = self._path(key)
        with self._translated("delete", key):
            try:
                path.unlink()
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                return
            self._prune(path.parent)

    def delete_many(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.delete(key)

    def delete_incomplete(self, prefix: str) -> int:
        """Unlink the temporary files of writes that never finished (their writer was
        killed between writing and renaming) under ``prefix``; prune emptied directories."""
        head = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        base = self._root.joinpath(*head.split("/")) if head else self._root
        removed = 0
        with self._translated("clean up", prefix or "/"):
            for dirpath, _dirs, files in os.walk(base, topdown=False):
                rel = pathlib.Path(dirpath).relative_to(self._root).as_posix()
                for name in files:
                    key = name if rel == "." else f"{rel}/{name}"
                    if key.startswith(prefix) and objects.is_temporary_name(name):
                        with contextlib.suppress(FileNotFoundError):
                            (pathlib.Path(dirpath) / name).unlink()
                            removed += 1
                self._prune(pathlib.Path(dirpath))
        return removed

    # -- internals ---------------------------------------------------------

    def _path(self, key: str) -> pathlib.Path:
        return self._root.joinpath(*objects.validate_key(key).split("/"))

    def _write_temp(self, target: pathlib.Path, data: bytes) -> pathlib.Path:
        failure: OSError | None = None
        for _ in range(_MKDIR_ATTEMPTS):
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
            except (FileExistsError, FileNotFoundError) as exc:
                failure = exc
                continue  # a concurrent delete pruned a directory mkdir was creating: again
            except NotADirectoryError as exc:
                raise self._cannot_create(target.parent, exc) from exc
            tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileNotFoundError:
                continue  # a concurrent delete pruned the directory: recreate it
            try:
                with os.fdopen(fd, "wb") as file:
                    file.write(data)
                    file.flush()
                    if self._fsync:
                        os.fsync(file.fileno())
            except BaseException:
                _unlink_quietly(tmp)
                raise
            return tmp
        if failure is not None:
            raise self._cannot_create(target.parent, failure) from failure
        raise FileNotFoundError(errno.ENOENT, "directory keeps disappearing", str(target.parent))

    def _cannot_create(self, directory: pathlib.Path, exc: OSError) -> errors.StorageError:
        return errors.StorageError(
            f"cannot create the directory {directory} of the store {self.describe()} "
            f"({exc.strerror or exc}): use a store directory that can be created and written"
        )

    def _create_exclusive(self, target: pathlib.Path, data: bytes) -> bool:
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            if self._fsync:
                os.fsync(file.fileno())
        self._sync_dir(target.parent)
        return True

    def _sync_dir(self, directory: pathlib.Path) -> None:
        if not self._fsync:
            return
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _prune(self, directory: pathlib.Path) -> None:
        while directory != self._root and self._root in directory.parents:
            try:
                directory.rmdir()
            except OSError:
                return
            directory = directory.parent

    def _translated(self, action: str, key: str) -> _OSErrorTranslation:
        return _OSErrorTranslation(self, action, key)


class _OSErrorTranslation:
    """Turn unexpected ``OSError``s into named storage errors with one clear sentence."""

    def __init__(self, store: LocalObjectStore, action: str, key: str) -> None:
        self._store = store
        self._action = action
        self._key = key

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if exc is None or not isinstance(exc, OSError):
            return
        if isinstance(exc, _INTERPRETED_BY_CALLERS):
            return
        where = self._store.describe()
        if isinstance(exc, PermissionError):
            raise errors.StorageAccessDeniedError(
                f"permission denied to {self._action} {self._key} in {where}: "
                "check the directory's owner and mode"
            ) from exc
        raise errors.StorageError(
            f"could not {self._action} {self._key} in {where}: {exc.strerror or exc}"
        ) from exc


def _unlink_quietly(path: pathlib.Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
