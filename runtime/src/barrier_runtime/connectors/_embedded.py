"""What every embedded broker (NATS, Kafka) shares: its settings, its process, ``with``.

The process itself, its temporary directory and log, and its cleanup (exactly once, also
at garbage collection and interpreter exit) are a
:class:`~barrier_runtime.processes.ServerProcess`, as for every server the runtime starts.
"""

from __future__ import annotations

import pathlib
from typing import Self

from barrier_runtime import processes
from barrier_runtime.core import service


class EmbeddedServer(service.Service):
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
        self._proc: processes.ServerProcess | None = None
        self._port = 0

    def start(self) -> Self:
        raise TypeError(f"{type(self).__name__} must implement start()")

    def stop(self) -> None:
        """Kill the server and remove what it stored (idempotent)."""
        if self._proc is not None:
            self._proc.stop()
        self._proc = None

    def restart(self) -> None:
        """Kill the server and start it again on the same ports and data (an outage in a test)."""
        if self._proc is not None:
            self._proc.kill()
        self.start()

    def log_tail(self, limit: int = 4000) -> str:
        """The end of the server's log (for failure messages)."""
        return "" if self._proc is None else self._proc.log_tail(limit)

    @property
    def running(self) -> bool:
        process = None if self._proc is None else self._proc.process
        return process is not None and process.poll() is None

    @property
    def pid(self) -> int | None:
        process = None if self._proc is None else self._proc.process
        return None if process is None else process.pid
