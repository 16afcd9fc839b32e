"""What every S3 server that we start as a child process shares, whichever server it is.

:class:`LocalS3Server` is the surface: credentials, ``endpoint``, ``open_store`` /
``url`` / ``create_bucket``, a context manager, ``stop``. A subclass says how its
server is launched (:meth:`LocalS3Server._launch`): SeaweedFS ``weed mini`` in
:mod:`~barrier_runtime.storage.embedded`, MinIO in the tests' support code
(``barrier_runtime_testing.minio_server``). What a running server owns (the process,
its temporary directory with the log, stray files; released exactly once) is a
:class:`~barrier_runtime.processes.ServerProcess`, as for every server we start.
:meth:`LocalS3Server._wait_ready` is the bounded readiness check (an optional health
URL, then a signed S3 request), and :meth:`LocalS3Server._start_on_free_ports` starts
again when a free port was taken before the server bound it.
"""

from __future__ import annotations

import abc
import pathlib
import secrets
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Self

from barrier_runtime import processes
from barrier_runtime.core import service
from barrier_runtime.storage import errors, s3

_START_ATTEMPTS = 3
PORT_RACE_SIGNS = ("address already in use", "Port allocation failed")
"""Log lines that say a free port was taken before the server bound it: start again."""


class _S3Probe:
    """Whether S3 serves at ``endpoint``: ``health_path`` (when given) answers, then a signed
    request is understood; ``problem`` says what the last try met."""

    def __init__(
        self, endpoint: str, *, access_key: str, secret_key: str, health_path: str | None
    ) -> None:
        self._endpoint = endpoint
        self._health_path = health_path
        self._store = s3.S3ObjectStore(
            endpoint,
            "cjob-probe",
            access_key=access_key,
            secret_key=secret_key,
            region="us-east-1",
            connect_timeout=1.0,
            read_timeout=5.0,
            retries=0,
        )
        self.problem = ""

    def __call__(self) -> bool:
        try:
            if self._health_path is not None:
                with urllib.request.urlopen(f"{self._endpoint}{self._health_path}", timeout=2.0):
                    self._health_path = None
            self._store.stat("ready")
        except errors.BucketNotFoundError:
            return True  # a signed request was understood: S3 is serving
        except (errors.StorageError, urllib.error.URLError, OSError) as exc:
            self.problem = f": {exc}"
            return False
        return True


class LocalS3Server(service.Service):
    """A throwaway S3 server in a child process; use as a context manager or call
    start/stop. Subclasses implement :meth:`_launch`."""

    server_name = "S3 server"

    def __init__(
        self,
        *,
        access_key: str,
        secret_key: str | None,
        startup_timeout: float,
        host: str,
    ) -> None:
        self._access_key = access_key
        self._secret_key = secret_key or secrets.token_urlsafe(24)
        self._startup_timeout = startup_timeout
        self._host = host
        self._resources: processes.ServerProcess | None = None
        self._endpoint: str | None = None

    # -- lifecycle ----------------------------------------------------------

    def start(self) -> Self:
        """Start the server and wait until S3 answers; raises :class:`EmbeddedServerError`."""
        if self._resources is not None:
            return self
        try:
            self._launch()
        except BaseException:
            self.stop()
            raise
        return self

    @abc.abstractmethod
    def _launch(self) -> None:
        """Start the server (through :meth:`_own`) and set ``self._endpoint`` once it serves."""

    def _own(self, prefix: str, *, graceful: bool, log_name: str) -> processes.ServerProcess:
        """A temporary directory (named ``prefix…``) and what will run there, in this
        server's care until :meth:`stop`."""
        self._resources = processes.ServerProcess(prefix, graceful=graceful, log_name=log_name)
        return self._resources

    def _wait_ready(self, endpoint: str, health_path: str | None = None) -> str | None:
        """``None`` (and ``endpoint`` set) once S3 serves there, else why not: first
        ``health_path`` (when given) answers 200, then a signed S3 request is understood."""
        assert self._resources is not None, "_own() comes first"
        probe = _S3Probe(
            endpoint,
            access_key=self._access_key,
            secret_key=self._secret_key,
            health_path=health_path,
        )
        problem = self._resources.wait_ready(probe, self._startup_timeout)
        if problem is None:
            self._endpoint = endpoint
        elif "not ready" in problem:
            problem = f"S3 did not become ready within {self._startup_timeout:g}s{probe.problem}"
        return problem

    def _start_on_free_ports(self, attempt: Callable[[], str | None], what: str) -> None:
        """Run ``attempt`` (spawn on free ports, wait: ``None`` once it serves, else why not)
        again while it fails because a free port was taken before the server bound it (at
        most three times); else raise :class:`EmbeddedServerError` naming ``what``."""
        problem: str | None = "it did not start"
        log = ""
        for _ in range(_START_ATTEMPTS):
            problem = attempt()
            if problem is None:
                return
            log = self.log_tail()
            if self._resources is not None:
                self._resources.kill()
            if not any(sign in log for sign in PORT_RACE_SIGNS):
                break  # not a port race: retrying will not help
        raise errors.EmbeddedServerError(
            f"{what} did not come up ({problem}); its last output: {log[-800:]!r}"
        )

    def stop(self) -> None:
        """Kill the server's process group and remove its temporary files (idempotent)."""
        if self._resources is not None:
            self._resources.stop()
        self._resources = None
        self._endpoint = None

    @property
    def running(self) -> bool:
        process = self._resources.process if self._resources else None
        return process is not None and process.poll() is None

    @property
    def pid(self) -> int | None:
        process = self._resources.process if self._resources else None
        return None if process is None else process.pid

    # -- what clients need ----------------------------------------------------

    @property
    def endpoint(self) -> str:
        """``http://<host>:<port>`` of the S3 API."""
        if self._endpoint is None:
            raise errors.EmbeddedServerError(
                f"the embedded {self.server_name} is not running: call start()"
            )
        return self._endpoint

    @property
    def host(self) -> str:
        return self._host

    @property
    def runtime_dir(self) -> pathlib.Path | None:
        """The temporary directory with the server's log (and, by default, its data)."""
        return self._resources.runtime_dir if self._resources else None

    @property
    def access_key(self) -> str:
        return self._access_key

    @property
    def secret_key(self) -> str:
        return self._secret_key

    def url(self, bucket: str, prefix: str = "") -> str:
        """``s3://bucket/prefix?endpoint=…`` for :func:`open_object_store`; creates the bucket."""
        return self.open_store(bucket, prefix).url()

    def open_store(self, bucket: str, prefix: str = "") -> s3.S3ObjectStore:
        """An :class:`S3ObjectStore` on this server with its credentials; creates the bucket."""
        return s3.S3ObjectStore(
            self.endpoint,
            bucket,
            prefix,
            access_key=self._access_key,
            secret_key=self._secret_key,
            create_bucket=True,
        )

    def create_bucket(self, bucket: str) -> None:
        self.open_store(bucket)

    def log_tail(self, limit: int = 4000) -> str:
        """The end of the server's combined output (for failure messages)."""
        return self._resources.log_tail(limit) if self._resources else ""
