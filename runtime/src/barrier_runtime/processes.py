"""The real servers the runtime starts as child processes (S3, brokers): launch, wait, stop.

:class:`ServerProcess` is what one such server owns: a temporary directory (its working
directory, with its log and, by default, its data), the process, started in a session of
its own (so a kill reaches what it starts) and, on Linux, told to die with the process
that started it (``PR_SET_PDEATHSIG``; strictly, when the starting *thread* ends, so start
servers from a thread that lives as long as they should), and stray files it leaves
elsewhere. ``kill()`` ends the process but keeps the directory (to start again on the same
data); ``stop()`` also removes the directory, exactly once, and runs as well at garbage
collection and at interpreter exit. :meth:`ServerProcess.wait_ready` is the bounded
readiness wait every server uses with a probe of its own.

The rest are the small helpers around it: finding a binary, free ports, whether a port
answers, a child's environment. The S3 servers (:mod:`~barrier_runtime.storage.s3_server`)
and the brokers (:mod:`~barrier_runtime.connectors.embedded_nats`,
:mod:`~barrier_runtime.connectors.embedded_kafka`) all launch through here.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pathlib
import shutil
import signal
import socket
import stat
import subprocess
import sys
import sysconfig
import tempfile
import time
import weakref
from collections.abc import Callable, Mapping, Sequence

_PR_SET_PDEATHSIG = 1
_GRACEFUL_STOP_SECONDS = 10.0
_POLL_SECONDS = 0.05


class ServerProcess:
    """One spawned server and its temporary directory; released exactly once.

    ``graceful``: SIGTERM (and up to 10 s) before SIGKILL, for servers whose data
    outlives them. ``log_name``: the file in ``runtime_dir`` that gets the output.
    """

    def __init__(
        self, prefix: str, *, graceful: bool = False, log_name: str = "server.log"
    ) -> None:
        self._held = _Held(pathlib.Path(tempfile.mkdtemp(prefix=prefix)), graceful, log_name)
        self._finalizer = weakref.finalize(self, self._held.release)

    @property
    def runtime_dir(self) -> pathlib.Path:
        return self._held.runtime_dir

    @property
    def log_path(self) -> pathlib.Path:
        return self._held.log_path

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        return self._held.process

    @property
    def stray_files(self) -> list[pathlib.Path]:
        """Unix sockets the server makes outside ``runtime_dir``, removed when it is killed."""
        return self._held.stray_files

    @stray_files.setter
    def stray_files(self, paths: Sequence[pathlib.Path]) -> None:
        self._held.stray_files = list(paths)

    def spawn(
        self, args: Sequence[str], env: Mapping[str, str] | None = None, *, new_log: bool = False
    ) -> subprocess.Popen[bytes]:
        """Start ``args`` (after killing a previous run) in ``runtime_dir``, output appended
        to the log (``new_log``: the log starts empty)."""
        self._held.kill()
        with open(self._held.log_path, "wb" if new_log else "ab") as log:
            self._held.process = subprocess.Popen(
                list(args),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self._held.runtime_dir,
                env=None if env is None else dict(env),
                start_new_session=True,
                preexec_fn=die_with_parent(),  # noqa: PLW1509 (only calls a resolved C function)
            )
        return self._held.process

    def wait_ready(self, probe: Callable[[], bool], timeout: float) -> str | None:
        """``None`` once ``probe()`` is true; else why not (it exited, or timed out)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            process = self._held.process
            if process is None or process.poll() is not None:
                code = None if process is None else process.returncode
                return f"it exited with status {code}"
            if probe():
                return None
            time.sleep(_POLL_SECONDS)
        return f"it was not ready within {timeout:g}s"

    def kill(self) -> None:
        """End the process group but keep ``runtime_dir`` (to start again on the same data)."""
        self._held.kill()

    def stop(self) -> None:
        """End the process group and remove ``runtime_dir`` (idempotent)."""
        self._finalizer()

    def log_tail(self, limit: int = 4000) -> str:
        """The end of the server's combined output (for failure messages)."""
        try:
            data = self._held.log_path.read_bytes()
        except OSError:
            return ""
        return data[-limit:].decode(errors="replace")


class _Held:
    """What :class:`ServerProcess` releases; apart from it, so that its finalizer can run."""

    def __init__(self, runtime_dir: pathlib.Path, graceful: bool, log_name: str) -> None:
        self.runtime_dir = runtime_dir
        self.graceful = graceful
        self.log_path = runtime_dir / log_name
        self.process: subprocess.Popen[bytes] | None = None
        self.stray_files: list[pathlib.Path] = []

    def kill(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if self.graceful and process.poll() is None:
            signal_group(process, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=_GRACEFUL_STOP_SECONDS)
        signal_group(process, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        for path in self.stray_files:
            with contextlib.suppress(OSError):
                if stat.S_ISSOCK(path.lstat().st_mode):
                    path.unlink()

    def release(self) -> None:
        self.kill()
        shutil.rmtree(self.runtime_dir, ignore_errors=True)


def find_binary(name: str, env_var: str) -> pathlib.Path | None:
    """``$env_var``, else ``name`` next to the interpreter or in its scripts dir, else ``PATH``."""
    candidates: list[pathlib.Path] = []
    if override := os.environ.get(env_var):
        candidates.append(pathlib.Path(override))
    candidates.append(pathlib.Path(sys.executable).parent / name)
    candidates.append(pathlib.Path(sysconfig.get_path("scripts")) / name)
    if found := shutil.which(name):
        candidates.append(pathlib.Path(found))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking Linux to SIGKILL the child when its parent dies."""
    if sys.platform != "linux":
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved before fork, not in the child
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def arrange() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return arrange


def signal_group(process: subprocess.Popen[bytes], signum: signal.Signals) -> None:
    """Send ``signum`` to ``process``'s process group (gone already: nothing to do)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


def free_ports(host: str, count: int) -> list[int]:
    """``count`` distinct ports that are free on ``host`` right now."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now."""
    return free_ports(host, 1)[0]


def port_open(host: str, port: int) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
        return True
    return False


def child_environment(drop: Sequence[str], **values: str) -> dict[str, str]:
    """This process's environment without ``drop``, with ``values`` set."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(values)
    return env
