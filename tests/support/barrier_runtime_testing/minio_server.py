"""MinIO, the second real S3 server of the storage tests: ``minio server`` on loopback.

:class:`MinioServer` has the surface of the SeaweedFS
:class:`~barrier_runtime.storage.embedded.EmbeddedS3Server` (both are
:class:`~barrier_runtime.storage.s3_server.LocalS3Server`): a single-drive
``minio server`` on two free ports (S3 API and console), a fresh data directory,
the root user and password it is given, no browser, no update checks, its
configuration and certificate directories inside its temporary directory (MinIO's
default is ``~/.minio``), no ``MINIO_*`` variable of ours leaking into it. Ready when
``/minio/health/live`` answers and then a signed S3 request is understood; a
failure names the log's tail. ``stop()`` kills the process group and removes the
temporary directory; the server dies with its parent (``PR_SET_PDEATHSIG``).

The binary: ``$CJOB_MINIO_BINARY``, else what ``scripts/minio-build.sh`` built for
the release ``devtools/minio_build/go.mod`` pins, in
``${CJOB_CACHE:-~/.cache/cjob}/minio/<pseudo-version>-<digest>/bin/minio``
(:func:`minio_binary`; the newest build of that release when several are cached).

>>> pinned_release()
'RELEASE.2026-02-12T20-18-48Z'
"""

from __future__ import annotations

import functools
import os
import pathlib
import re
import subprocess
from collections.abc import Mapping, Sequence

from barrier_runtime import processes
from barrier_runtime.storage import errors, s3_server

REPO = pathlib.Path(__file__).resolve().parents[3]
BUILD_MODULE = REPO / "devtools" / "minio_build" / "go.mod"
BINARY_ENV = "CJOB_MINIO_BINARY"
_MODULE = "github.com/minio/minio"
_HEALTH_PATH = "/minio/health/live"


class MinioNotBuiltError(errors.EmbeddedServerError):
    """No MinIO binary on this machine: ``scripts/minio-build.sh`` builds one."""


def pinned_module_version() -> str:
    """The Go pseudo-version of ``github.com/minio/minio`` in the build module's go.mod."""
    found = re.search(rf"^\s*{re.escape(_MODULE)}\s+(v\S+)", BUILD_MODULE.read_text(), re.M)
    if found is None:
        raise MinioNotBuiltError(f"{BUILD_MODULE} does not require {_MODULE}: restore it")
    return found.group(1)


def pinned_release() -> str:
    """``RELEASE.<date>``, MinIO's name for the pinned pseudo-version's commit."""
    stamp = pinned_module_version().split("-")[1]
    return (
        f"RELEASE.{stamp[0:4]}-{stamp[4:6]}-{stamp[6:8]}"
        f"T{stamp[8:10]}-{stamp[10:12]}-{stamp[12:14]}Z"
    )


def minio_binary() -> pathlib.Path:
    """The MinIO server binary, or :class:`MinioNotBuiltError` saying how to get one."""
    if override := os.environ.get(BINARY_ENV):
        path = pathlib.Path(override)
        if path.is_file() and os.access(path, os.X_OK):
            return path
        raise MinioNotBuiltError(f"{BINARY_ENV}={override} is not an executable file")
    cache = pathlib.Path(os.environ.get("CJOB_CACHE") or pathlib.Path.home() / ".cache" / "cjob")
    built = [
        path
        for path in (cache / "minio").glob(f"{pinned_module_version()}-*/bin/minio")
        if os.access(path, os.X_OK)
    ]
    if not built:
        raise MinioNotBuiltError(
            f"MinIO {pinned_release()} is not built on this machine: run scripts/minio-build.sh "
            f"(it builds it once into {cache / 'minio'}), or set {BINARY_ENV}"
        )
    return max(built, key=lambda path: path.stat().st_mtime)


@functools.cache
def binary_release(binary: pathlib.Path) -> str:
    """The ``RELEASE.<date>`` a MinIO binary reports (``minio --version``)."""
    out = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, timeout=30, check=False
    )
    found = re.search(r"RELEASE\.[0-9TZ-]+", out.stdout)
    if out.returncode != 0 or found is None:
        raise errors.EmbeddedServerError(
            f"{binary} --version did not name a MinIO release (exit {out.returncode}): "
            f"{(out.stdout + out.stderr)[-300:]!r}"
        )
    return found.group(0)


class MinioServer(s3_server.LocalS3Server):
    """A throwaway single-drive MinIO server; use as a context manager or call start/stop.

    ``data_dir=None`` keeps data in the temporary directory ``stop()`` deletes (and
    stops with SIGKILL); with a ``data_dir`` the data is kept and MinIO gets SIGTERM first.
    """

    server_name = "MinIO server"

    def __init__(
        self,
        *,
        access_key: str = "cjob-test",
        secret_key: str | None = None,
        data_dir: pathlib.Path | None = None,
        buckets: Sequence[str] = (),
        startup_timeout: float = 60.0,
        host: str = "127.0.0.1",
        binary: pathlib.Path | None = None,
        port: int | None = None,
    ) -> None:
        """``port``: the S3 API's port (default: a free one, like the console's)."""
        super().__init__(
            access_key=access_key,
            secret_key=secret_key,
            startup_timeout=startup_timeout,
            host=host,
        )
        self._data_dir = data_dir
        self._buckets = tuple(buckets)
        self._binary = binary
        self._port = port
        self._ports: dict[str, int] = {}

    @property
    def ports(self) -> Mapping[str, int]:
        """``{"api": …, "console": …}`` of the running server."""
        return dict(self._ports)

    @property
    def version(self) -> str:
        """The server's release, ``RELEASE.<date>`` (``minio --version``)."""
        return binary_release(self._binary or minio_binary())

    def stop(self) -> None:
        """Kill the server's process group and remove its temporary files (idempotent)."""
        super().stop()
        self._ports = {}

    def _launch(self) -> None:
        binary = self._binary or minio_binary()
        resources = self._own(
            "cjob-minio-", graceful=self._data_dir is not None, log_name="minio.log"
        )
        data_dir = self._data_dir or resources.runtime_dir / "data"
        data_dir.mkdir(parents=True, exist_ok=True)

        def attempt() -> str | None:
            api, console = processes.free_ports(self._host, 2)
            api = self._port or api
            resources.spawn(
                [
                    str(binary),
                    "server",
                    str(data_dir),
                    "--address",
                    f"{self._host}:{api}",
                    "--console-address",
                    f"{self._host}:{console}",
                    "--config-dir",
                    str(resources.runtime_dir / "config"),
                    "--certs-dir",
                    str(resources.runtime_dir / "certs"),
                ],
                self._environment(),
                new_log=True,
            )
            problem = self._wait_ready(f"http://{self._host}:{api}", _HEALTH_PATH)
            if problem is None:
                self._ports = {"api": api, "console": console}
            return problem

        self._start_on_free_ports(attempt, f"MinIO ({binary})")
        for bucket in self._buckets:
            self.create_bucket(bucket)

    def _environment(self) -> dict[str, str]:
        ours = [k for k in os.environ if k.startswith(("MINIO_", "AWS_"))]
        return processes.child_environment(
            ours,
            MINIO_ROOT_USER=self._access_key,
            MINIO_ROOT_PASSWORD=self._secret_key,
            MINIO_BROWSER="off",
            MINIO_UPDATE="off",
            MINIO_CALLHOME_ENABLE="off",
        )
