"""What every S3 server that we start as a child process shares, whichever server it is.

:class:`LocalS3Server` is the surface: credentials, ``endpoint``, ``open_store`` /
``url`` / ``create_bucket``, a context manager, ``stop``. A subclass says how its
server is launched (:meth:`LocalS3Server._launch`): SeaweedFS ``weed mini`` in
:mod:`~barrier_runtime.storage.embedded`, MinIO in the tests' support code
(``barrier_runtime_testing.minio_server``). :class:`ServerProcess` holds what a
running server owns: the process, started in a session of its own and told to die
with its parent (``PR_SET_PDEATHSIG``), its temporary directory with the log, and
stray files it leaves elsewhere; released exactly once by ``stop()``, by garbage
collection or at interpreter exit. :func:`wait_until_serving` is the bounded
readiness check: an optional health URL, then a signed S3 request.
"""

from __future__ import annotations

import abc
import contextlib
import os
import pathlib
import secrets
import shutil
import signal
import stat
import subprocess
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Self

from barrier_runtime import processes
from barrier_runtime.storage import errors, s3

_GRACEFUL_STOP_SECONDS = 10.0
PORT_RACE_SIGNS = ("address already in use", "Port allocation failed")
"""Log lines that say a free port was taken before the server bound it: start again."""


class ServerProcess:
    """What a running server holds; released exactly once (stop, GC or interpreter exit)."""

    def __init__(self, runtime_dir: pathlib.Path, *, graceful: bool, log_name: str) -> None:
        """``graceful``: SIGTERM (and up to 10 s) before SIGKILL, for servers whose data
        outlives them."""
        self.runtime_dir = runtime_dir
        self.graceful = graceful
        self.log_path = runtime_dir / log_name
        self.process: subprocess.Popen[bytes] | None = None
        self.stray_files: list[pathlib.Path] = []
        """Unix sockets the server makes outside ``runtime_dir``, removed when it stops."""

    def spawn(self, args: Sequence[str], env: Mapping[str, str]) -> subprocess.Popen[bytes]:
        """Start ``args`` in a session of its own, output to the log, cwd ``runtime_dir``."""
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                list(args),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.runtime_dir,
                env=dict(env),
                start_new_session=True,
                preexec_fn=processes.die_with_parent(),  # noqa: PLW1509 (only calls a resolved C function)
            )
        return self.process

    def log_tail(self, limit: int = 4000) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        return data[-limit:].decode(errors="replace")

    def kill(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if self.graceful and process.poll() is None:
            processes.signal_group(process, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=_GRACEFUL_STOP_SECONDS)
        processes.signal_group(process, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        for path in self.stray_files:
            with contextlib.suppress(OSError):
                if stat.S_ISSOCK(path.lstat().st_mode):
                    path.unlink()

    def release(self) -> None:
        self.kill()
        shutil.rmtree(self.runtime_dir, ignore_errors=True)


def wait_until_serving(
    process: subprocess.Popen[bytes],
    endpoint: str,
    *,
    access_key: str,
    secret_key: str,
    timeout: float,
    health_path: str | None = None,
) -> str | None:
    """``None`` once ``endpoint`` answers a signed S3 request (after ``health_path``, when
    given, answers 200), else why it did not within ``timeout`` seconds."""
    probe = s3.S3ObjectStore(
        endpoint,
        "cjob-probe",
        access_key=access_key,
        secret_key=secret_key,
        region="us-east-1",
        connect_timeout=1.0,
        read_timeout=5.0,
        retries=0,
    )
    deadline = time.monotonic() + timeout
    healthy = health_path is None
    last = f"S3 did not answer within {timeout:g}s"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return f"it exited with status {process.returncode}"
        try:
            if not healthy:
                with urllib.request.urlopen(f"{endpoint}{health_path}", timeout=2.0):
                    healthy = True
            probe.stat("ready")
        except errors.BucketNotFoundError:
            return None  # a signed request was understood: S3 is serving
        except (errors.StorageError, urllib.error.URLError, OSError) as exc:
            last = f"S3 did not become ready within {timeout:g}s: {exc}"
            time.sleep(0.05)
            continue
        return None
    return last


class LocalS3Server(abc.ABC):
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
        self._resources: ServerProcess | None = None
        self._finalizer: weakref.finalize[[], LocalS3Server] | None = None
        self._endpoint: str | None = None

    # -- lifecycle ----------------------------------------------------------

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

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

    def _own(self, runtime_dir: pathlib.Path, *, graceful: bool, log_name: str) -> ServerProcess:
        """Take ``runtime_dir`` (and what will run there) under this server's care."""
        resources = ServerProcess(runtime_dir, graceful=graceful, log_name=log_name)
        self._resources = resources
        self._finalizer = weakref.finalize(self, resources.release)
        return resources

    def _wait_ready(
        self, process: subprocess.Popen[bytes], endpoint: str, health_path: str | None = None
    ) -> str | None:
        """``None`` (and ``endpoint`` set) once S3 serves there, else why not."""
        problem = wait_until_serving(
            process,
            endpoint,
            access_key=self._access_key,
            secret_key=self._secret_key,
            timeout=self._startup_timeout,
            health_path=health_path,
        )
        if problem is None:
            self._endpoint = endpoint
        return problem

    def stop(self) -> None:
        """Kill the server's process group and remove its temporary files (idempotent)."""
        if self._finalizer is not None:
            self._finalizer()
        self._finalizer = None
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


def child_environment(drop: Sequence[str], **values: str) -> dict[str, str]:
    """This process's environment without ``drop``, with ``values`` set."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(values)
    return env
