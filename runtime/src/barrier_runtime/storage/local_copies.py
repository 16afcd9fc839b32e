"""Local copies of a job's incremental state objects, for task-local recovery (issue 32).

A worker that uploads an object of an incremental chain (``shared/``) also keeps it in a
local directory: on Kubernetes the executor's local directory, which outlives a restart
of its container; on one machine, a directory under the system's temporary one. A
restore on the same host reads an object from there when the copy has the handle's size
and sha256, and from the store otherwise (and then keeps it too). A copy that does not
match is deleted, never used.

The directory is per job (its path in the store), laid out like the store's ``shared/``.
Once a checkpoint completes, each subtask prunes the copies of its subtask index that
are older than that checkpoint's bases (:meth:`LocalCopies.prune`): no restore of it or
of a later checkpoint reads them.
Writes go to a temporary name first and are renamed into place, so a reader never sees
half an object.

>>> import tempfile
>>> from barrier_runtime.core import metadata as md
>>> from barrier_runtime.storage import integrity
>>> copies = LocalCopies(pathlib.Path(tempfile.mkdtemp()))
>>> handle = integrity.make_handle("shared/s/0000000003-0-ab", b"data", "s", 0, md.HandleKind.KEYED)
>>> copies.keep(handle.key, b"data")
>>> copies.read(handle)
b'data'
>>> copies.prune(step_id="s", subtask=0, before=3), copies.prune(step_id="s", subtask=0, before=4)
(0, 1)
>>> copies.read(handle) is None
True
"""

from __future__ import annotations

import contextlib
import logging
import os
import pathlib
import tempfile
import uuid

from barrier_runtime.core import layout
from barrier_runtime.core import metadata as md
from barrier_runtime.storage import integrity, object_store

log = logging.getLogger(__name__)

ROOT_ENV = "CJOB_LOCAL_STATE_DIR"
"""Where local copies go. Default: ``cjob-local-state`` in Spark's first local directory
(``$SPARK_LOCAL_DIRS``: on Kubernetes the executor's own volume), else in the system's
temporary directory."""


def default_root(job_path: str) -> pathlib.Path:
    """The local directory of the job at ``job_path`` on this host."""
    base = os.environ.get(ROOT_ENV)
    if not base:
        spark_dirs = [d for d in os.environ.get("SPARK_LOCAL_DIRS", "").split(",") if d]
        parent = spark_dirs[0] if spark_dirs else tempfile.gettempdir()
        base = os.path.join(parent, "cjob-local-state")
    return pathlib.Path(base, object_store.validate_key(job_path.strip("/") or "job"))


class LocalCopies:
    """Verified local copies of ``shared/`` objects under ``root``; thread-safe."""

    def __init__(self, root: pathlib.Path) -> None:
        self.root = root

    def _path(self, key: str) -> pathlib.Path:
        if not key.startswith(f"{layout.SHARED_DIR}/"):
            raise ValueError(f"only shared objects have local copies, not {key!r}")
        return self.root / object_store.validate_key(key)

    def keep(self, key: str, data: bytes) -> None:
        """Keep a copy of the object ``key`` (a failure to write one is logged, not raised:
        the store has the object)."""
        path = self._path(key)
        temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(data)
            temporary.replace(path)
        except OSError as exc:
            log.warning("could not keep a local copy of %s in %s: %s", key, self.root, exc)
            with contextlib.suppress(OSError):
                temporary.unlink()

    def read(self, handle: md.StateHandle) -> bytes | None:
        """The local copy of ``handle``'s object if it has its size and sha256, else ``None``
        (a copy that does not match is deleted)."""
        try:
            path = self._path(handle.key)
        except ValueError:
            return None
        try:
            data = path.read_bytes()
        except OSError:
            return None
        problem = integrity.check(handle, data)
        if problem is None:
            return data
        log.warning("ignoring the local copy of %s: %s", handle.key, problem)
        with contextlib.suppress(OSError):
            path.unlink()
        return None

    def prune(self, *, step_id: str, subtask: int, before: int) -> int:
        """Delete the copies of ``step_id`` written by ``subtask`` as of a checkpoint before
        ``before`` (its chains' oldest base once checkpoint ``before``'s chains completed);
        how many went."""
        folder = self.root / layout.SHARED_DIR / step_id
        try:
            names = [p.name for p in folder.iterdir()]
        except OSError:
            return 0
        gone = 0
        for name in names:
            found = _origin(name)
            if found is None or found[1] != subtask or found[0] >= before:
                continue
            with contextlib.suppress(OSError):
                (folder / name).unlink()
                gone += 1
        return gone


def _origin(name: str) -> tuple[int, int] | None:
    """``(as_of, subtask)`` of a chain object's name (``{as_of:010d}-{subtask}-{sha256}``)."""
    parts = name.split("-")
    if len(parts) != 3 or not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    return int(parts[0]), int(parts[1])
