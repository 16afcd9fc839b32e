"""Run a throwaway broker process on loopback without leaking it.

:class:`ServerProcess` starts a binary in its own process group (so a
kill reaches its children), with its output in a log file inside a
temporary directory, and on Linux asks the kernel to kill it when the
starting process dies (``PR_SET_PDEATHSIG``; strictly, when the starting
*thread* ends, so start servers from a thread that lives as long as they
should). ``stop()`` is idempotent and also runs at garbage collection and
interpreter exit.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Self

from barrier_runtime import processes

_PR_SET_PDEATHSIG = 1


class ServerProcess:
    """One spawned server; ``runtime_dir`` holds its log (``server.log``) and data."""

    def __init__(self, prefix: str) -> None:
        self.runtime_dir = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
        self._state = _State(self.runtime_dir)
        self._finalizer = weakref.finalize(self, self._state.release)

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        return self._state.process

    def spawn(self, args: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        self._state.kill()
        with open(self.runtime_dir / "server.log", "ab") as out:
            self._state.process = subprocess.Popen(
                list(args),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.runtime_dir,
                env=None if env is None else dict(env),
                start_new_session=True,
                preexec_fn=processes.die_with_parent(),  # noqa: PLW1509 (only calls a resolved C function)
            )

    def wait_ready(self, probe: Callable[[], bool], timeout: float) -> str | None:
        """``None`` once ``probe()`` is true; else why not (exited, or timed out)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            process = self._state.process
            if process is None or process.poll() is not None:
                code = None if process is None else process.returncode
                return f"it exited with status {code}"
            if probe():
                return None
            time.sleep(0.05)
        return f"it was not ready within {timeout:g}s"

    def kill(self) -> None:
        """Kill the process group but keep the runtime directory (to restart on the same data)."""
        self._state.kill()

    def stop(self) -> None:
        """Kill the process group and remove the runtime directory (idempotent)."""
        self._finalizer()

    def log_tail(self, limit: int = 2000) -> str:
        try:
            data = (self.runtime_dir / "server.log").read_bytes()
        except OSError:
            return ""
        return data[-limit:].decode(errors="replace")


class _State:
    def __init__(self, runtime_dir: pathlib.Path) -> None:
        self.runtime_dir = runtime_dir
        self.process: subprocess.Popen[bytes] | None = None

    def kill(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)

    def release(self) -> None:
        self.kill()
        shutil.rmtree(self.runtime_dir, ignore_errors=True)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def port_open(host: str, port: int) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
        return True
    return False


find_binary = processes.find_binary


class EmbeddedServer:
    """What every embedded broker shares: its settings, its process, and ``with`` support.

    Subclasses implement ``start()`` (returning ``self``): spawn ``self._proc`` and
    wait until it serves.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        startup_timeout: float = 20.0,
        binary: pathlib.Path | None = None,
    ) -> None:
        self.host = host
        self.startup_timeout = startup_timeout
        self._binary = binary
        self._proc: ServerProcess | None = None
        self._port = 0

    def start(self) -> Self:
        raise TypeError(f"{type(self).__name__} must implement start()")

    def stop(self) -> None:
        """Kill the server and remove what it stored (idempotent)."""
        if self._proc is not None:
            self._proc.stop()
        self._proc = None

    @property
    def running(self) -> bool:
        process = None if self._proc is None else self._proc.process
        return process is not None and process.poll() is None

    @property
    def pid(self) -> int | None:
        process = None if self._proc is None else self._proc.process
        return None if process is None else process.pid

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
