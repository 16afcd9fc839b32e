"""Named errors of the network transport: a dead peer, a refused handshake, a corrupt frame."""

from __future__ import annotations


class ChannelClosedError(Exception):
    """The connection that carries a channel is gone; this worker must fail its attempt.

    Raised by the next operation on every channel of a connection that was
    reset, closed by the peer before the channel's end of partition, broke the
    framing protocol, or was closed locally. The driver restarts the job from
    the last completed checkpoint; retrying the channel cannot help, because
    records in flight on it are lost.
    """

    def __init__(self, peer: int, address: str, reason: str, channel: int | None = None) -> None:
        self.peer = peer
        self.address = address
        self.reason = reason
        self.channel = channel
        what = f"channel {channel} with" if channel is not None else "connection to"
        super().__init__(
            f"{what} worker {peer} ({address}) is closed: {reason}; "
            "this worker must fail its attempt and restart from the last checkpoint"
        )


class HandshakeRejectedError(ChannelClosedError):
    """The peer refused our HELLO: another job attempt, the wrong worker, or a duplicate.

    A worker of an old attempt that is still alive gets this when it tries to
    talk to the workers of the new attempt (and vice versa), so stale records
    never enter the new attempt's channels.
    """


class PeerUnreachableError(ChannelClosedError):
    """A peer did not accept our connection, or did not connect to us, before the timeout."""


class FrameError(ValueError):
    """Bytes on the wire that are not a valid frame (bad kind, length or payload)."""
