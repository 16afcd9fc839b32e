"""One log file per ``cjob`` invocation: where the details behind a one-sentence error go.

The terminal shows the CLI's level (errors only unless ``--verbose``); the
file gets everything at DEBUG. Commands that run a job (``run``, ``demo``,
``driver``) open it at start (:meth:`InvocationLog.attach`); ``checkpoints``
commands create it only when an error must be recorded
(:meth:`InvocationLog.record`).

Where: the first of ``$CJOB_LOG_DIR``, ``${XDG_STATE_HOME:-~/.local/state}/cjob/logs``
and ``<tmp>/cjob-logs-<uid>`` that can be created and written. Names are
``cjob-<command>-<YYYYmmdd-HHMMSS>-<pid>.log``; only the newest
:data:`KEEP` are kept. No writable directory at all is not an error: the
invocation runs without a file and the messages point at ``--verbose``.

>>> import tempfile
>>> log = InvocationLog("list", directory=pathlib.Path(tempfile.mkdtemp()))
>>> log.path is None, log.ensure().name.startswith("cjob-list-")
(True, True)
"""

from __future__ import annotations

import contextlib
import logging
import os
import pathlib
import tempfile
import time
import traceback

LOG_DIR_ENV = "CJOB_LOG_DIR"
KEEP = 20
"""How many invocation logs a directory keeps (the newest)."""
_FORMAT = "%(asctime)s %(levelname)s %(process)d %(threadName)s %(name)s: %(message)s"
_QUIET_LIBRARIES = ("py4j", "urllib3")
"""Chatty at DEBUG (a line per call or request): only their INFO and up reach the file."""


def candidate_directories() -> list[pathlib.Path]:
    """Where logs may go, best first."""
    explicit = os.environ.get(LOG_DIR_ENV)
    state = os.environ.get("XDG_STATE_HOME") or str(pathlib.Path.home() / ".local" / "state")
    fallback = pathlib.Path(tempfile.gettempdir()) / f"cjob-logs-{os.getuid()}"
    found = [pathlib.Path(state) / "cjob" / "logs", fallback]
    return [pathlib.Path(explicit).expanduser(), *found] if explicit else found


def writable_directory() -> pathlib.Path | None:
    """The first candidate directory that exists (or can be created) and can be written."""
    for directory in candidate_directories():
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(directory, os.W_OK | os.X_OK):
            return directory
    return None


def prune(directory: pathlib.Path, keep: int = KEEP) -> None:
    """Delete all but the newest ``keep`` invocation logs in ``directory``."""
    logs = sorted(directory.glob("cjob-*.log"), key=_mtime, reverse=True)
    for old in logs[keep:]:
        with contextlib.suppress(OSError):
            old.unlink()


def _not_chatty(record: logging.LogRecord) -> bool:
    """Drop the DEBUG lines of libraries that log one per call or request."""
    return record.levelno > logging.DEBUG or not record.name.startswith(_QUIET_LIBRARIES)


def _mtime(path: pathlib.Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


class InvocationLog:
    """The log file of one invocation of ``command``, created on first use."""

    def __init__(self, command: str, *, directory: pathlib.Path | None = None) -> None:
        self.command = command
        self._directory = directory
        self._path: pathlib.Path | None = None
        self._handler: logging.FileHandler | None = None
        self._root_level: int | None = None

    @property
    def path(self) -> pathlib.Path | None:
        """The file, once created."""
        return self._path

    def ensure(self) -> pathlib.Path | None:
        """Create the file (once); ``None`` when no directory can be written."""
        if self._handler is None:
            self._handler = self._open()
        return self._path

    def attach(self) -> pathlib.Path | None:
        """Create the file and send every log record (DEBUG and up) there from now on."""
        if self.ensure() is None or self._handler is None:
            return None
        root = logging.getLogger()
        if self._handler not in root.handlers:
            root.addHandler(self._handler)
            self._root_level = root.level
            root.setLevel(logging.DEBUG)
        return self._path

    def record(self, exc: BaseException, summary: str) -> pathlib.Path | None:
        """Write ``summary`` and the full traceback of ``exc`` (causes included) to the file."""
        if self.ensure() is None or self._handler is None:
            return None
        text = "".join(traceback.format_exception(exc)).rstrip()
        detail = getattr(exc, "detail", "")
        if detail:  # the user's traceback, from the worker that failed
            text += f"\nthe failing step's traceback:\n{detail.rstrip()}"
        record = logging.LogRecord(
            "barrier_runtime.cli", logging.ERROR, __file__, 0, "%s\n%s", (summary, text), None
        )
        self._handler.handle(record)
        self._handler.flush()
        return self._path

    def close(self) -> None:
        """Detach from the root logger and close the file (it stays on disk)."""
        if self._handler is None:
            return
        root = logging.getLogger()
        root.removeHandler(self._handler)
        if self._root_level is not None:
            root.setLevel(self._root_level)
        self._handler.close()

    def _open(self) -> logging.FileHandler | None:
        directory = self._directory or writable_directory()
        if directory is None:
            return None
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = directory / f"cjob-{self.command}-{stamp}-{os.getpid()}.log"
        try:
            handler = logging.FileHandler(path, encoding="utf-8")
        except OSError:
            return None
        handler.setLevel(logging.DEBUG)
        handler.addFilter(_not_chatty)
        handler.setFormatter(logging.Formatter(_FORMAT))
        self._path = path
        prune(directory)
        return handler
