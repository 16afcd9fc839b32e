"""Reading and writing frames on a blocking socket.

:class:`FrameReader` reads whole frames through a buffered file (few
``recv`` calls for many small frames). :func:`send_buffers` writes many
encoded frames with vectored ``sendmsg`` calls, so the Arrow payload of a big
batch is never copied into a joined buffer.
"""

from __future__ import annotations

import socket

from barrier_runtime.channels import codec, frames

_READ_BUFFER = 256 * 1024
_MAX_IOV = 512


class FrameReader:
    """Reads frames from one socket; one reader per socket, used by one thread."""

    def __init__(self, sock: socket.socket) -> None:
        self._file = sock.makefile("rb", buffering=_READ_BUFFER)

    def read(self) -> tuple[frames.FrameKind, int, bytes] | None:
        """The next ``(kind, channel, payload)``; None when the peer closed between frames.

        Raises :class:`EOFError` if the stream ends inside a frame and
        :class:`~barrier_runtime.channels.errors.FrameError` for a corrupt header.
        """
        header = self._file.read(frames.HEADER.size)
        if not header:
            return None
        if len(header) < frames.HEADER.size:
            raise EOFError("connection closed inside a frame header")
        length, kind, channel = frames.parse_header(header)
        payload = self._file.read(length) if length else b""
        if len(payload) < length:
            raise EOFError(f"connection closed inside a {kind.name} frame")
        return kind, channel, payload

    def close(self) -> None:
        self._file.close()


def send_buffers(sock: socket.socket, buffers: list[codec.Payload]) -> None:
    """Write every buffer, in order, completely (vectored I/O, partial sends resumed)."""
    views = [memoryview(b).cast("B") for b in buffers if len(b)]
    start = 0
    while start < len(views):
        sent = sock.sendmsg(views[start : start + _MAX_IOV])
        while sent:
            head = views[start]
            if sent >= len(head):
                sent -= len(head)
                start += 1
            else:
                views[start] = head[sent:]
                sent = 0
