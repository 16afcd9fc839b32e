"""Authenticated message framing between the driver's coordinator and its workers.

Each connection carries messages in frames signed with HMAC-SHA256 under
the attempt's secret key::

    u32 payload length | 32-byte HMAC | payload (message codec)

The MAC covers a direction byte (``W`` worker → driver, ``D`` driver →
worker), a random 16-byte connection nonce that the driver sends first, an
8-byte per-direction sequence number and the payload. So a frame is
accepted only if it was made with the key, for this connection, in this
direction and in this position: nothing can be forged, replayed, reordered
or reflected. The MAC is checked (in constant time) *before* decoding, and
the payload is never pickle: it is the typed, data-only
:mod:`~barrier_runtime.spark.message_codec`, which can only build the
runtime's own registered message dataclasses from plain values. So even a
holder of the key can at worst send a wrong message, never run code.

There is no encryption: messages hold state handles and positions, never
credentials (workers read those from their environment).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import socket
import struct
import threading
from typing import Any

from barrier_runtime.core import values
from barrier_runtime.spark import message_codec

NONCE_SIZE = 16
MAX_FRAME = 256 << 20
_HEADER = struct.Struct("!I32s")
_SEQ = struct.Struct("!Q")
TO_DRIVER = b"W"
TO_WORKER = b"D"


class AuthenticationError(ConnectionError):
    """A frame's MAC did not verify: wrong key, tampering, replay or a stale worker."""


class MalformedFrameError(ConnectionError):
    """A correctly signed frame that is not a message (a peer of another release, or a bug)."""


def derive_key(secret: bytes, purpose: str) -> bytes:
    """A sub-key of ``secret`` for one purpose (control-plane MACs, data-plane token)."""
    return hmac.new(secret, purpose.encode(), hashlib.sha256).digest()


def new_nonce() -> bytes:
    return os.urandom(NONCE_SIZE)


class FramedConnection:
    """One end of an authenticated connection; ``send`` is thread-safe, ``receive`` is not."""

    def __init__(
        self, sock: socket.socket, key: bytes, nonce: bytes, *, outgoing: bytes, incoming: bytes
    ) -> None:
        self.sock = sock
        self._key = key
        self._nonce = nonce
        self._out = outgoing
        self._in = incoming
        self._send_seq = 0
        self._recv_seq = 0
        self._send_lock = threading.Lock()
        self._file = sock.makefile("rb")

    def _mac(self, direction: bytes, seq: int, payload: bytes) -> bytes:
        mac = hmac.new(self._key, direction + self._nonce + _SEQ.pack(seq), hashlib.sha256)
        mac.update(payload)
        return mac.digest()

    def send(self, message: Any) -> None:
        """Sign and send ``message``; raises ``OSError`` when the connection is gone."""
        payload = message_codec.encode(message)
        with self._send_lock:
            header = _HEADER.pack(len(payload), self._mac(self._out, self._send_seq, payload))
            self._send_seq += 1
            self.sock.sendall(header + payload)

    def receive(self) -> Any | None:
        """The next message; ``None`` when the connection was closed between frames.

        :class:`MalformedFrameError` when a signed frame does not decode to a message.
        """
        try:
            payload = self._receive()
        except ValueError:  # our own close() closed the file under a blocked read
            return None
        if payload is None:
            return None
        try:
            return message_codec.decode(payload)
        except values.ValueDecodeError as exc:
            raise MalformedFrameError(f"undecodable control frame: {exc}") from exc

    def _receive(self) -> bytes | None:
        header = self._file.read(_HEADER.size)
        if not header:
            return None
        if len(header) < _HEADER.size:
            raise EOFError("connection closed inside a frame header")
        length, mac = _HEADER.unpack(header)
        if length > MAX_FRAME:
            raise AuthenticationError(f"frame of {length} bytes refused (limit {MAX_FRAME})")
        payload = self._file.read(length)
        if len(payload) < length:
            raise EOFError("connection closed inside a frame")
        if not hmac.compare_digest(mac, self._mac(self._in, self._recv_seq, payload)):
            raise AuthenticationError("message authentication failed")
        self._recv_seq += 1
        return payload

    def close(self) -> None:
        """Shut the connection down at once (also for a thread blocked in :meth:`receive`)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._file.close()
        self.sock.close()


def accept_side(sock: socket.socket, key: bytes) -> FramedConnection:
    """The driver's end: send a fresh nonce, then speak signed frames."""
    nonce = new_nonce()
    sock.sendall(nonce)
    return FramedConnection(sock, key, nonce, outgoing=TO_WORKER, incoming=TO_DRIVER)


def connect_side(sock: socket.socket, key: bytes) -> FramedConnection:
    """A worker's end: read the driver's nonce, then speak signed frames."""
    nonce = b""
    while len(nonce) < NONCE_SIZE:
        chunk = sock.recv(NONCE_SIZE - len(nonce))
        if not chunk:
            raise EOFError("the driver closed the connection before its nonce")
        nonce += chunk
    return FramedConnection(sock, key, nonce, outgoing=TO_DRIVER, incoming=TO_WORKER)
