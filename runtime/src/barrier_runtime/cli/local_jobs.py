"""How ``cjob stop`` and ``cjob savepoint`` find the control API of a ``cjob run`` on this machine.

While it runs, ``cjob run`` keeps one small JSON file in the jobs directory
(``$CJOB_JOBS_DIR``, else ``${XDG_STATE_HOME:-~/.local/state}/cjob/jobs``),
named after its process id::

    {"pid": 4242, "job": "default/wordcount", "url": "http://127.0.0.1:40123",
     "token": "…", "token_env": null, "store": "file:///…", "started": 1700000000.0}

``token`` is the bearer token ``cjob run`` generated for its control API when
``$CJOB_CONTROL_TOKEN`` was not set; a token the user chose is never copied
to disk (``token_env`` then names the variable to read it from). The
directory is created private (0700) and the file is written private (0600),
as ``~/.kube/config`` is. The file is removed when the run ends; one left
behind by a killed run is ignored (its process is gone) and removed by the
next reader.

>>> import tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> job = LocalJob(os.getpid(), "default/p", "http://127.0.0.1:1", None, "T", "file:///s", 0.0)
>>> path = publish(job, folder)
>>> running(folder) == [job], oct(path.stat().st_mode & 0o777)
(True, '0o600')
>>> withdraw(path); running(folder)
[]
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pathlib
from dataclasses import asdict, dataclass
from typing import Any

log = logging.getLogger(__name__)

JOBS_DIR_ENV = "CJOB_JOBS_DIR"


@dataclass(frozen=True, slots=True)
class LocalJob:
    """One running ``cjob run`` and where its control API listens."""

    pid: int
    job: str
    """``NAMESPACE/NAME`` as in the store."""
    url: str
    token: str | None
    """The generated bearer token (``None`` when the user chose one)."""
    token_env: str | None
    """The environment variable holding a token the user chose."""
    store: str
    started: float

    def for_storage(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_storage(cls, raw: Any) -> LocalJob | None:
        """``None`` for anything that is not a record this module wrote."""
        try:
            return cls(
                pid=int(raw["pid"]),
                job=str(raw["job"]),
                url=str(raw["url"]),
                token=None if raw.get("token") is None else str(raw["token"]),
                token_env=None if raw.get("token_env") is None else str(raw["token_env"]),
                store=str(raw.get("store", "")),
                started=float(raw.get("started", 0.0)),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None


def directory() -> pathlib.Path:
    """Where records live (created on first :func:`publish`)."""
    explicit = os.environ.get(JOBS_DIR_ENV)
    if explicit:
        return pathlib.Path(explicit).expanduser()
    state = os.environ.get("XDG_STATE_HOME") or str(pathlib.Path.home() / ".local" / "state")
    return pathlib.Path(state) / "cjob" / "jobs"


def publish(job: LocalJob, folder: pathlib.Path | None = None) -> pathlib.Path | None:
    """Write ``job``'s record (private); ``None`` when the directory cannot be written."""
    folder = folder or directory()
    path = folder / f"{job.pid}.json"
    temporary = folder / f".{job.pid}.json.tmp"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(job.for_storage(), handle)
        temporary.replace(path)
    except OSError as exc:
        log.warning("cannot publish the control API of %s in %s: %s", job.job, folder, exc)
        return None
    return path


def withdraw(path: pathlib.Path | None) -> None:
    """Remove a record written by :func:`publish` (gone already is fine)."""
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()


def running(folder: pathlib.Path | None = None) -> list[LocalJob]:
    """The records of runs whose process is alive, oldest first; stale records are removed."""
    folder = folder or directory()
    try:
        paths = sorted(folder.glob("*.json"))
    except OSError:
        return []
    found = []
    for path in paths:
        try:
            job = LocalJob.from_storage(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
        if job is None:
            continue
        if not _alive(job.pid):
            withdraw(path)
            continue
        found.append(job)
    return sorted(found, key=lambda j: (j.started, j.pid))


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
