"""A worker's network: listen, rendezvous, connect to peers, hand out channel endpoints.

Life of a worker's network (one per worker process and job attempt):

1. ``WorkerNetwork(worker, num_workers, token)`` listens on an ephemeral port.
2. The worker publishes :attr:`WorkerNetwork.address` (``"host:port"``); the
   Spark layer exchanges addresses through the driver (``spark/rendezvous.py``).
3. :meth:`WorkerNetwork.connect` opens one connection to every peer, retrying
   refused connections until its timeout, and introduces itself with HELLO
   (attempt token, its index, the peer's index). The peer answers WELCOME or
   REJECT: a worker of another attempt, a wrong index or a duplicate is
   refused, so a stale worker can never feed the new attempt.
4. Channel endpoints are created by ``(logical channel id, peer)`` in any
   order relative to the connections: :meth:`input_channel` on the receiving
   worker, :meth:`output_channel` on the sending worker. Both sides must use
   the same id for the same logical channel; ids are unique per direction of
   a worker pair.
5. :meth:`wait_for_peers` waits until every peer's connection to us arrived.
6. :meth:`close` flushes what is queued (a graceful end after END_OF_PARTITION)
   and closes everything; :meth:`abort` closes at once.

>>> from barrier_runtime.api.batch import Batch
>>> import time
>>> from barrier_runtime.task import channel as local_channel
>>> a = WorkerNetwork(0, 2, "attempt-1")
>>> b = WorkerNetwork(1, 2, "attempt-1")
>>> peers = {0: a.address, 1: b.address}
>>> a.connect(peers); b.connect(peers)
>>> signal = local_channel.Signal()
>>> out = a.output_channel(5, peer=1, sender=signal)
>>> inp = b.input_channel(5, peer=0, receiver=signal, capacity=2)
>>> out.put(Batch.from_rows([{"x": 1}]))
>>> deadline = time.monotonic() + 10
>>> while len(inp) < 1 and time.monotonic() < deadline:
...     time.sleep(0.001)
>>> inp.take().rows()
({'x': 1},)
>>> a.close(); b.close()
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import socket
import threading
import time
from collections.abc import Iterable, Mapping

from barrier_runtime.channels import connection, endpoints, errors, frames, wire

_log = logging.getLogger(__name__)
_RETRY_FIRST = 0.05
_RETRY_MAX = 1.0


class WorkerNetwork:
    """The network endpoint of one worker process; thread-safe."""

    def __init__(
        self,
        worker: int,
        num_workers: int,
        token: str,
        *,
        host: str = "127.0.0.1",
        advertised_host: str | None = None,
        handshake_timeout: float = 10.0,
        listener: socket.socket | None = None,
    ) -> None:
        """``listener``: a socket already listening on ``host`` to take over (default: a new
        one on an ephemeral port)."""
        if not 0 <= worker < num_workers:
            raise ValueError(f"worker index {worker} is outside 0..{num_workers - 1}")
        if not token:
            raise ValueError("the job attempt token must not be empty")
        self.worker = worker
        self.num_workers = num_workers
        self._token = token
        self._handshake_timeout = handshake_timeout
        self._lock = threading.Condition()
        self._outbound: dict[int, connection.OutboundLink] = {}
        self._inbound: dict[int, connection.InboundLink] = {}
        self._closed = False
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = listener or socket.create_server(
            (host, 0), family=family, backlog=max(16, 2 * num_workers)
        )
        port = self._listener.getsockname()[1]
        self.address = format_address(advertised_host or host, port)
        self._acceptor = threading.Thread(
            target=self._accept_loop, name=f"cjob-net-{worker}-accept", daemon=True
        )
        self._acceptor.start()

    # -- rendezvous ---------------------------------------------------------------------

    def connect(self, peers: Mapping[int, str], timeout: float = 30.0) -> None:
        """Open our connection to every peer in ``peers`` (index → ``"host:port"``) but us.

        Raises :class:`~barrier_runtime.channels.errors.PeerUnreachableError`
        when a peer does not accept before ``timeout`` and
        :class:`~barrier_runtime.channels.errors.HandshakeRejectedError` when it
        refuses us (another attempt, wrong index).
        """
        deadline = time.monotonic() + timeout
        for peer, address in sorted(peers.items()):
            if peer == self.worker:
                continue
            self._check_peer_index(peer)
            sock, reader = self._open(peer, address, deadline)
            self._link_to(peer).attach(sock, reader, address)

    def wait_for_peers(self, peers: Iterable[int] | None = None, timeout: float = 30.0) -> None:
        """Wait until each of ``peers`` (default: all others) has connected to us."""
        expected = set(range(self.num_workers)) - {self.worker} if peers is None else set(peers)
        deadline = time.monotonic() + timeout
        with self._lock:
            while missing := sorted(
                p for p in expected if p not in self._inbound or not self._inbound[p].attached
            ):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise errors.PeerUnreachableError(
                        missing[0], "unknown", f"workers {missing} did not connect in {timeout}s"
                    )
                self._lock.wait(left)

    # -- endpoints ----------------------------------------------------------------------

    def output_channel(
        self, channel: int, peer: int, sender: endpoints.Wakeable
    ) -> endpoints.RemoteOutputChannel:
        """The sending end of logical channel ``channel`` to worker ``peer``."""
        self._check_peer_index(peer)
        _check_channel_id(channel)
        return self._link_to(peer).register(channel, sender)

    def input_channel(
        self, channel: int, peer: int, receiver: endpoints.Wakeable, capacity: int
    ) -> endpoints.RemoteInputChannel:
        """The receiving end of ``channel`` from ``peer``; buffers at most ``capacity`` batches."""
        self._check_peer_index(peer)
        _check_channel_id(channel)
        return self._link_from(peer).register(channel, receiver, capacity)

    # -- shutdown -------------------------------------------------------------------------

    def expect_close(self) -> None:
        """The attempt's ``Shutdown`` arrived: peers that leave first are not warned about."""
        with self._lock:
            links = [*self._outbound.values(), *self._inbound.values()]
        for link in links:
            link.expect_close()

    def close(self, flush_timeout: float = 10.0) -> None:
        """Send what is queued (up to ``flush_timeout``), then close every connection."""
        deadline = time.monotonic() + flush_timeout
        outbound, inbound = self._stop()
        for out in outbound:
            out.close_gracefully(deadline)
        for link in inbound:
            link.close()
        self._acceptor.join(1.0)

    def abort(self) -> None:
        """Close every connection at once; queued frames are dropped."""
        outbound, inbound = self._stop()
        for link in [*outbound, *inbound]:
            link.close()
        self._acceptor.join(1.0)

    def __enter__(self) -> WorkerNetwork:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
        else:
            self.abort()

    def _stop(self) -> tuple[list[connection.OutboundLink], list[connection.InboundLink]]:
        with self._lock:
            self._closed = True
            outbound, inbound = list(self._outbound.values()), list(self._inbound.values())
        _close_listener(self._listener)
        return outbound, inbound

    # -- internals --------------------------------------------------------------------------

    def _check_peer_index(self, peer: int) -> None:
        if peer == self.worker or not 0 <= peer < self.num_workers:
            raise ValueError(
                f"worker {self.worker} has no peer {peer} (workers 0..{self.num_workers - 1})"
            )

    def _link_to(self, peer: int) -> connection.OutboundLink:
        with self._lock:
            self._check_open()
            return self._outbound.setdefault(peer, connection.OutboundLink(self.worker, peer))

    def _link_from(self, peer: int) -> connection.InboundLink:
        with self._lock:
            self._check_open()
            return self._inbound.setdefault(peer, connection.InboundLink(self.worker, peer))

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"the network of worker {self.worker} is closed")

    def _open(
        self, peer: int, address: str, deadline: float
    ) -> tuple[socket.socket, wire.FrameReader]:
        host, port = parse_address(address)
        delay = _RETRY_FIRST
        while True:
            left = deadline - time.monotonic()
            try:
                sock = socket.create_connection((host, port), timeout=max(0.05, left))
                break
            except OSError as exc:
                if left <= 0:
                    raise errors.PeerUnreachableError(
                        peer, address, f"no connection before the timeout: {exc}"
                    ) from exc
                time.sleep(min(delay, max(0.0, left)))
                delay = min(2 * delay, _RETRY_MAX)
        try:
            return sock, self._introduce(sock, peer, address)
        except BaseException:
            sock.close()
            raise

    def _introduce(self, sock: socket.socket, peer: int, address: str) -> wire.FrameReader:
        sock.settimeout(self._handshake_timeout)
        wire.send_buffers(sock, frames.encode(0, frames.Hello(self._token, self.worker, peer)))
        reader = wire.FrameReader(sock)
        try:
            frame = reader.read()
            reply = None if frame is None else frames.decode(*frame)[1]
        except (OSError, EOFError, errors.FrameError) as exc:
            raise errors.ChannelClosedError(peer, address, f"handshake failed: {exc}") from exc
        if isinstance(reply, frames.Reject):
            raise errors.HandshakeRejectedError(peer, address, f"refused us: {reply.reason}")
        if not isinstance(reply, frames.Welcome):
            raise errors.ChannelClosedError(peer, address, f"handshake failed: got {reply!r}")
        if reply.worker != peer or not hmac.compare_digest(reply.token, self._token):
            raise errors.HandshakeRejectedError(
                peer, address, f"the address belongs to worker {reply.worker} of another attempt"
            )
        sock.settimeout(None)
        _tune(sock)
        return reader

    def _accept_loop(self) -> None:
        while True:
            try:
                sock, addr = self._listener.accept()
            except OSError:
                return  # listener closed
            threading.Thread(
                target=self._serve,
                args=(sock, format_address(addr[0], addr[1])),
                name=f"cjob-net-{self.worker}-from-incoming-reader",
                daemon=True,
            ).start()

    def _serve(self, sock: socket.socket, address: str) -> None:
        """Handshake an incoming connection, then run its reader (this thread)."""
        sock.settimeout(self._handshake_timeout)
        reader = wire.FrameReader(sock)
        try:
            frame = reader.read()
            hello = None if frame is None else frames.decode(*frame)[1]
            if not isinstance(hello, frames.Hello):
                raise errors.FrameError(f"expected HELLO, got {hello!r}")
        except (OSError, EOFError, errors.FrameError) as exc:
            _log.warning("worker %d: bad handshake from %s: %s", self.worker, address, exc)
            reader.close()
            sock.close()
            return
        link = self._admit(sock, hello, address)
        if link is None:
            reader.close()
            sock.close()
            return
        threading.current_thread().name = f"cjob-net-{self.worker}-from-{hello.sender}-reader"
        link.read_loop(reader)

    def _admit(
        self, sock: socket.socket, hello: frames.Hello, address: str
    ) -> connection.InboundLink | None:
        reason = self._refusal(hello)
        with self._lock:
            link = self._inbound.get(hello.sender)
            if reason is None and link is not None and link.attached:
                reason = f"worker {hello.sender} is connected already"
            if reason is None:
                link = self._inbound.setdefault(
                    hello.sender, connection.InboundLink(self.worker, hello.sender)
                )
        try:
            if reason is not None:
                _log.warning("worker %d: refused %s: %s", self.worker, address, reason)
                wire.send_buffers(sock, frames.encode(0, frames.Reject(reason)))
                return None
            wire.send_buffers(sock, frames.encode(0, frames.Welcome(self.worker, self._token)))
        except OSError as exc:
            _log.warning("worker %d: handshake with %s failed: %s", self.worker, address, exc)
            return None
        assert link is not None
        sock.settimeout(None)
        _tune(sock)
        link.attach(sock, address)
        with self._lock:
            self._lock.notify_all()
        return link

    def _refusal(self, hello: frames.Hello) -> str | None:
        if self._closed:
            return f"worker {self.worker} is shutting down"
        if not hmac.compare_digest(hello.token.encode(), self._token.encode()):
            return (
                f"worker {hello.sender} belongs to another job attempt "
                f"(token {hello.token[:12]!r}…); stale workers are not admitted"
            )
        if hello.receiver != self.worker:
            return f"this is worker {self.worker}, not worker {hello.receiver}"
        if hello.sender == self.worker or not 0 <= hello.sender < self.num_workers:
            return f"no worker {hello.sender} in a job of {self.num_workers} workers"
        return None


def format_address(host: str, port: int) -> str:
    """``"host:port"``, with IPv6 hosts in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_address(address: str) -> tuple[str, int]:
    """The inverse of :func:`format_address`.

    >>> parse_address("10.0.0.7:4711"), parse_address("[::1]:80")
    (('10.0.0.7', 4711), ('::1', 80))
    """
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"expected 'host:port', got {address!r}")
    return host.strip("[]"), int(port)


def _check_channel_id(channel: int) -> None:
    if not 0 <= channel < 2**32:
        raise ValueError(f"logical channel ids are 32-bit unsigned integers, got {channel}")


def _tune(sock: socket.socket) -> None:
    """No Nagle delay (credits and barriers are tiny); keepalive finds silent peer loss."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, value in (("TCP_KEEPIDLE", 10), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, option):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


def _close_listener(listener: socket.socket) -> None:
    with contextlib.suppress(OSError):
        listener.shutdown(socket.SHUT_RDWR)  # wakes accept() on Linux
    listener.close()
