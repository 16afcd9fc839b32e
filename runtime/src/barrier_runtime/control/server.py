"""The driver's control API server: start it next to a job, stop it with the job.

The API: docs/architecture.md, 'Control API', and docs/control-api.md.

>>> from barrier_runtime.control.server import ControlServer
>>> # with ControlServer(executor, port=8081, token=secret) as server:
>>> #     executor.run()            # operator calls server.url + "/v1/checkpoints"

Lifecycle: :meth:`ControlServer.start` binds the socket (``port=0`` picks a
free one; read :attr:`ControlServer.port` afterwards) and serves from a daemon
thread; :meth:`ControlServer.stop` returns within about a tenth of a second
(it does not wait for requests in flight: their threads are daemons). Both are
idempotent. The token is used for comparison only, never logged.
"""

from __future__ import annotations

import logging
import threading
from typing import Self

from barrier_runtime.control import api, auth, job, metrics
from barrier_runtime.control import http as control_http
from barrier_runtime.core import service

log = logging.getLogger(__name__)

POLL_INTERVAL = 0.05
"""How often the serving loop checks for shutdown (bounds :meth:`ControlServer.stop`)."""


class ControlServerError(RuntimeError):
    """The control API could not start (e.g. its port is taken)."""


class ControlServer(service.Service):
    """HTTP control API over one :class:`~barrier_runtime.control.job.JobControl`."""

    def __init__(
        self,
        job_control: job.JobControl,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        store_describe: str | None = None,
        namespace: str | None = None,
        job_name: str | None = None,
        stop_timeout: float = api.DEFAULT_STOP_TIMEOUT,
    ) -> None:
        """``token=None`` disables authentication (laptop runs only); ``store_describe``
        is shown as ``storage`` in ``GET /v1/job``; ``namespace`` and ``job_name`` label
        the metrics (``job_name`` defaults to the dataflow's name); ``stop_timeout``
        caps how long ``POST /v1/stop`` waits for its savepoint."""
        self._address = (host, port)
        self._authenticator = auth.BearerAuth(token)
        self.metrics = metrics.JobMetrics(job_control, namespace=namespace, job_name=job_name)
        self.api = api.ControlApi(
            job_control,
            authenticator=self._authenticator,
            job_metrics=self.metrics,
            storage=store_describe,
            stop_timeout=stop_timeout,
        )
        self._server: control_http.ControlHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> Self:
        with self._lock:
            if self._server is not None:
                return self
            try:
                server = control_http.ControlHTTPServer(self._address, self.api)
            except OSError as exc:
                host, port = self._address
                raise ControlServerError(
                    f"cannot serve the control API on {host}:{port}: {exc.strerror or exc}; "
                    f"choose another port (0 picks a free one)"
                ) from exc
            thread = threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": POLL_INTERVAL},
                name=f"cjob-control-api:{server.server_address[1]}",
                daemon=True,
            )
            thread.start()
            self._server, self._thread = server, thread
        log.info(
            "control API listening on %s (authentication %s)",
            self.url,
            "on" if self._authenticator.enabled else "OFF: no token configured",
        )
        return self

    def stop(self) -> None:
        with self._lock:
            server, thread = self._server, self._thread
            self._server, self._thread = None, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)
        log.info("control API stopped")

    @property
    def running(self) -> bool:
        return self._server is not None

    # -- address ----------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (after :meth:`start`)."""
        server = self._require_started()
        return int(server.server_address[1])

    @property
    def host(self) -> str:
        return self._address[0]

    @property
    def url(self) -> str:
        """``http://host:port`` (IPv6 hosts in brackets), after :meth:`start`."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def _require_started(self) -> control_http.ControlHTTPServer:
        server = self._server
        if server is None:
            raise ControlServerError("the control API server is not started; call start() first")
        return server

    def __repr__(self) -> str:
        where = self.url if self._server is not None else "not started"
        return f"ControlServer({where})"
