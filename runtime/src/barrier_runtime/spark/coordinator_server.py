"""The driver's TCP endpoint for workers: authenticate, then route their messages to the attempt.

One server lives as long as the driver; attempts come and go. Each accepted
connection is served by its own thread:

1. send a fresh nonce, then read the first frame with the *current*
   attempt's key (:mod:`~barrier_runtime.spark.wire`); a frame that does not
   verify — a worker of an older attempt, anyone without the key — or that is
   not a ``Hello`` for this attempt closes the connection;
2. register the worker with the attempt (which refuses duplicates);
3. hand every following message to the attempt, then report the end of the
   connection (clean close or error) to it.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from typing import Protocol

from barrier_runtime.channels import network as network_mod
from barrier_runtime.spark import messages, wire

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT = 30.0


class WorkerSessions(Protocol):
    """What the server needs from the attempt it currently serves."""

    @property
    def number(self) -> int: ...

    @property
    def key(self) -> bytes: ...

    def worker_connected(self, hello: messages.Hello, conn: wire.FramedConnection) -> bool:
        """Accept (True) or refuse the worker that said ``hello``."""
        ...

    def worker_message(self, worker: int, message: object) -> None: ...

    def worker_disconnected(self, worker: int, reason: str) -> None: ...


class CoordinatorServer:
    """Accepts worker connections on ``host:port`` (0: ephemeral) for the current attempt."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, advertised_host: str | None = None
    ) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.create_server((host, port), family=family, backlog=64)
        self.port: int = self._listener.getsockname()[1]
        self.address = network_mod.format_address(advertised_host or host, self.port)
        self._lock = threading.Lock()
        self._current: WorkerSessions | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._accept_loop, name="cjob-coord", daemon=True)
        self._thread.start()

    def serve(self, attempt: WorkerSessions | None) -> None:
        """Route new connections to ``attempt`` from now on (``None``: refuse them)."""
        with self._lock:
            self._current = attempt

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._current = None
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join(2.0)

    def __enter__(self) -> CoordinatorServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept_loop(self) -> None:
        while True:
            try:
                sock, peer = self._listener.accept()
            except OSError:
                return
            with self._lock:
                attempt = None if self._closed else self._current
            if attempt is None:
                sock.close()
                continue
            threading.Thread(
                target=self._serve,
                args=(sock, peer, attempt),
                daemon=True,
                name=f"cjob-coord-{peer[1]}",
            ).start()

    def _serve(self, sock: socket.socket, peer: object, attempt: WorkerSessions) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # Step 1
        sock.settimeout(HANDSHAKE_TIMEOUT)
        try:
            conn = wire.accept_side(sock, attempt.key)
        except OSError:
            sock.close()
            return
        try:
            hello = conn.receive()
            sock.settimeout(None)
        except (OSError, EOFError, wire.AuthenticationError) as exc:
            log.warning("refused a connection from %s: %s", peer, exc)
            conn.close()
            return
        # Step 2
        if (
            not isinstance(hello, messages.Hello)
            or hello.attempt != attempt.number
            or not attempt.worker_connected(hello, conn)
        ):
            log.warning(
                "refused a connection from %s: not a worker of attempt %d", peer, attempt.number
            )
            conn.close()
            return
        # Step 3
        reason = "connection closed"
        try:
            while (message := conn.receive()) is not None:
                attempt.worker_message(hello.worker, message)
        except (OSError, EOFError, wire.AuthenticationError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
        finally:
            conn.close()
        attempt.worker_disconnected(hello.worker, reason)
