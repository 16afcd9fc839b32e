"""One TCP connection per (sender worker → receiver worker), with its two threads.

Why one connection per direction
    The worker that sends data opens the connection (Flink's netty shuffle
    does the same: data one way, credits back the other way on the same
    socket). Data of the opposite direction travels on the peer's own
    connection, so a credit is never queued in a kernel buffer behind
    megabytes of data going the same way, and back-pressure is lifted as
    soon as the receiver takes a batch. Roles are fixed, so there is no
    simultaneous-open race or tie-break, and a failure names exactly one
    sender and one receiver. The cost is ``P·(P-1)`` sockets instead of half
    as many, which is nothing at the parallelism of a Spark barrier stage.

Why threads
    Each connection has one reader and one writer thread on a blocking
    socket. ``sendmsg``/``recv`` release the GIL, so I/O overlaps the task
    threads; a dead peer surfaces as an exception in the thread that owns
    the socket; and "priority frames first" is a property of the writer's
    pick under one condition variable. A selector loop would save threads but
    needs partial-write buffering and a wake-up pipe, for no gain at a few
    dozen connections per worker.

:class:`OutboundLink` (this worker sends): writer thread picks frames from
its output channels (priority barriers of every channel first, then one
sendable item per channel round-robin) and writes them with vectored I/O;
reader thread applies CREDIT frames. :class:`InboundLink` (this worker
receives): reader thread decodes frames into its input channels; writer
thread sends the coalesced credits the tasks return.

A link is created when its first channel is registered or its socket
arrives, whichever is first, and fails once: the first error wins, every
channel is woken, and later operations raise ChannelClosedError.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable

from barrier_runtime.channels import endpoints, errors, frames, wire

_log = logging.getLogger(__name__)
_MAX_FRAMES_PER_WRITE = 32
_JOIN_TIMEOUT = 5.0
_PEER_CLOSED = "the peer closed the connection (its process exited, failed or closed it)"


class _Link:
    """State shared by both directions: the socket, the failure, the threads."""

    direction = ""

    def __init__(self, worker: int, peer: int) -> None:
        self.worker = worker
        self._peer = peer
        self.address = "not connected"
        self._cond = threading.Condition()
        self._sock: socket.socket | None = None
        self._error: str | None = None
        self._closing = False
        self._threads: list[threading.Thread] = []

    @property
    def peer(self) -> int:
        return self._peer

    @property
    def cond(self) -> threading.Condition:
        return self._cond

    @property
    def attached(self) -> bool:
        return self._sock is not None

    @property
    def error(self) -> str | None:
        return self._error

    def check(self, channel: int) -> None:
        reason = self._error
        if reason is not None:
            raise errors.ChannelClosedError(self._peer, self.address, reason, channel)

    def grant(self, channel: int, batches: int) -> None:
        raise TypeError("credits flow from the receiving side only: an outbound link grants none")

    def fail(self, reason: str, *, quiet: bool = False) -> None:
        """Shut the connection down for good; the first reason is the one channels report."""
        with self._cond:
            if self._error is not None:
                return
            self._error = reason
            sock = self._sock
            quiet = quiet or self._closing
            self._cond.notify_all()
        if sock is not None:
            _shutdown(sock, socket.SHUT_RDWR)
        log = _log.debug if quiet else _log.warning
        log(
            "worker %d: connection %s worker %d (%s) closed: %s",
            self.worker,
            self.direction,
            self._peer,
            self.address,
            reason,
        )
        self._wake_all()

    def expect_close(self) -> None:
        """The attempt is ending (its ``Shutdown`` arrived): the peer closing is expected,
        so it is logged quietly; channels still report it to a subtask that uses them."""
        with self._cond:
            self._closing = True

    def close(self, timeout: float = _JOIN_TIMEOUT) -> None:
        """Fail the link as closed locally, wait for its threads and release the socket."""
        with self._cond:
            self._closing = True
        self.fail("the connection was closed by this worker", quiet=True)
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout)
        if self._sock is not None:
            self._sock.close()

    def _start(
        self, sock: socket.socket, address: str, *targets: tuple[str, Callable[[], None]]
    ) -> None:
        with self._cond:
            if self._sock is not None:
                raise RuntimeError(f"worker {self._peer} is already connected")
            self._sock = sock
            self.address = address
            failed = self._error is not None
        if failed:
            sock.close()
            return
        for role, target in targets:
            name = f"cjob-net-{self.worker}-{self.direction}-{self._peer}-{role}"
            thread = threading.Thread(target=target, name=name, daemon=True)
            self._threads.append(thread)
            thread.start()

    def _wake_all(self) -> None:
        """Wake every task waiting on this link's channels (each direction knows its own)."""
        raise TypeError(f"{type(self).__name__} must say whom to wake")


class OutboundLink(_Link):
    """This worker → ``peer``: output channels, a frame writer and a credit reader."""

    direction = "to"

    def __init__(self, worker: int, peer: int) -> None:
        super().__init__(worker, peer)
        self._channels: dict[int, endpoints.RemoteOutputChannel] = {}
        self._order: list[endpoints.RemoteOutputChannel] = []
        self._early_credits: dict[int, int] = {}
        self._rr = 0
        self._in_flight = 0
        self.frames_sent = 0

    def register(self, channel: int, sender: endpoints.Wakeable) -> endpoints.RemoteOutputChannel:
        with self._cond:
            if channel in self._channels:
                raise ValueError(f"output channel {channel} to worker {self._peer} exists already")
            endpoint = endpoints.RemoteOutputChannel(self, channel, sender)
            self._channels[channel] = endpoint
            self._order.append(endpoint)
            early = self._early_credits.pop(channel, 0)
            if early:
                endpoint._granted(early)
            return endpoint

    def attach(self, sock: socket.socket, reader: wire.FrameReader, address: str) -> None:
        self._reader = reader
        self._start(sock, address, ("writer", self._write_loop), ("reader", self._read_loop))

    def close_gracefully(self, deadline: float) -> None:
        """Send what is queued, then close without losing anything the peer has not read.

        Waits (until ``deadline``) for the queues to drain, half-closes the
        socket, and waits for the peer to close its side — so our socket is
        never closed with unread credits in it, which would make the kernel
        send a reset that can discard frames the peer has not read yet.
        """
        with self._cond:
            self._closing = True
            while self._error is None and (
                self._in_flight or not all(ch._idle for ch in self._order)
            ):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            sock = self._sock if self._error is None else None
        if sock is not None:
            _shutdown(sock, socket.SHUT_WR)
            for thread in self._threads:
                if thread.name.endswith("reader"):
                    thread.join(max(0.0, deadline - time.monotonic()))
        self.close()

    def _write_loop(self) -> None:
        sock = self._sock
        assert sock is not None
        try:
            while True:
                with self._cond:
                    picked = self._pick()
                    while not picked and self._error is None:
                        self._cond.wait()
                        picked = self._pick()
                    if self._error is not None:
                        return
                    self._in_flight = len(picked)
                buffers: frames.Buffers = []
                for channel, item, priority in picked:
                    buffers += frames.encode(channel, item, priority=priority)
                wire.send_buffers(sock, buffers)
                with self._cond:
                    self._in_flight = 0
                    self.frames_sent += len(picked)
                    self._cond.notify_all()  # close_gracefully waits for the queues to drain
        except OSError as exc:
            self.fail(f"sending failed: {exc}")
        except Exception as exc:
            self.fail(f"cannot encode a frame: {exc!r}")

    def _pick(self) -> list[tuple[int, endpoints.Item, bool]]:
        picked: list[tuple[int, endpoints.Item, bool]] = []
        for ch in self._order:  # priority barriers of every channel go first
            while (barrier := ch._next_priority()) is not None:
                picked.append((ch.channel, barrier, True))
        n = len(self._order)
        progress = True
        while progress and len(picked) < _MAX_FRAMES_PER_WRITE:
            progress = False
            for step in range(n):
                ch = self._order[(self._rr + step) % n]
                nxt = ch._next()
                if nxt is not None:
                    picked.append((ch.channel, nxt[0], nxt[1]))
                    progress = True
            self._rr = (self._rr + 1) % n if n else 0
        return picked

    def _read_loop(self) -> None:
        try:
            while True:
                frame = self._reader.read()
                if frame is None:
                    self.fail(_PEER_CLOSED, quiet=self._all_finished())
                    return
                channel, message = frames.decode(*frame)
                if not isinstance(message, frames.Credit):
                    raise errors.FrameError(f"unexpected {type(message).__name__} from a receiver")
                self._credit(channel, message.batches)
        except (OSError, EOFError) as exc:
            self.fail(f"connection lost: {exc}", quiet=self._all_finished())
        except errors.FrameError as exc:
            self.fail(f"protocol error: {exc}")

    def _credit(self, channel: int, batches: int) -> None:
        """Apply credits; wake the writer only if data waits for them, the task only if
        they lift its back-pressure (each wake costs a GIL hand-over)."""
        with self._cond:
            endpoint = self._channels.get(channel)
            if endpoint is None:  # the receiver registered first
                self._early_credits[channel] = self._early_credits.get(channel, 0) + batches
                return
            if endpoint._waiting_for_credits or not endpoint._opened:
                self._cond.notify_all()
            lifted = endpoint._granted(batches)
        if lifted:
            endpoint._wake()

    def _all_finished(self) -> bool:
        with self._cond:
            return all(ch._finished for ch in self._order)

    def _wake_all(self) -> None:
        with self._cond:
            channels = list(self._order)
        for ch in channels:
            ch._wake()


class InboundLink(_Link):
    """``peer`` → this worker: input channels, a frame reader and a credit writer."""

    direction = "from"

    def __init__(self, worker: int, peer: int) -> None:
        super().__init__(worker, peer)
        self._channels: dict[int, endpoints.RemoteInputChannel] = {}
        self._credits_due: dict[int, int] = {}

    def register(
        self, channel: int, receiver: endpoints.Wakeable, capacity: int
    ) -> endpoints.RemoteInputChannel:
        with self._cond:
            if channel in self._channels:
                raise ValueError(f"input channel {channel} from worker {self._peer} exists already")
            endpoint = endpoints.RemoteInputChannel(self, channel, receiver, capacity)
            self._channels[channel] = endpoint
        self.grant(channel, capacity)  # the initial credits open the channel at the sender
        return endpoint

    def grant(self, channel: int, batches: int) -> None:
        with self._cond:
            self._credits_due[channel] = self._credits_due.get(channel, 0) + batches
            self._cond.notify_all()

    def attach(self, sock: socket.socket, address: str) -> None:
        """Start the credit writer; the caller then runs :meth:`read_loop` on its own thread."""
        self._start(sock, address, ("writer", self._write_loop))
        self._threads.append(threading.current_thread())  # the reader, joined by close()

    def read_loop(self, reader: wire.FrameReader) -> None:
        try:
            while True:
                frame = reader.read()
                if frame is None:
                    self.fail(_PEER_CLOSED, quiet=self._all_ended())
                    return
                channel, message = frames.decode(*frame)
                endpoint = self._channels.get(channel)
                if endpoint is None:
                    raise errors.FrameError(f"frame for channel {channel}, never granted credits")
                endpoint._deliver(message)
        except (OSError, EOFError) as exc:
            self.fail(f"connection lost: {exc}", quiet=self._all_ended())
        except errors.FrameError as exc:
            self.fail(f"protocol error: {exc}")
        finally:
            reader.close()

    def _write_loop(self) -> None:
        sock = self._sock
        assert sock is not None
        try:
            while True:
                with self._cond:
                    while not self._credits_due and self._error is None:
                        self._cond.wait()
                    if self._error is not None:
                        return
                    due, self._credits_due = self._credits_due, {}
                buffers: frames.Buffers = []
                for channel, batches in due.items():
                    buffers += frames.encode(channel, frames.Credit(batches))
                wire.send_buffers(sock, buffers)
        except OSError as exc:
            self.fail(f"sending credits failed: {exc}", quiet=self._all_ended())

    def _all_ended(self) -> bool:
        with self._cond:
            channels = list(self._channels.values())
        return all(ch.ended for ch in channels)

    def _wake_all(self) -> None:
        with self._cond:
            channels = list(self._channels.values())
        for ch in channels:
            ch._wake()


def _shutdown(sock: socket.socket, how: int) -> None:
    with contextlib.suppress(OSError):  # already reset or closed: nothing left to shut
        sock.shutdown(how)
