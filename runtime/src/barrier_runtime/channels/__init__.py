"""Channels between subtasks: message types, and the TCP transport between worker processes.

What belongs here: what travels on a channel (``messages``), its wire format
(``frames``: length-prefixed frames with a logical channel id; ``codec``: data
batches as Arrow IPC or value-coded rows; ``wire``: socket reading and writing),
the credit-based endpoints that are drop-in for the in-process
``LocalChannel`` (``endpoints``), the per-worker-pair connections and their
threads (``connection``), and the per-worker :class:`WorkerNetwork` that
listens, rendezvouses and hands out endpoints (``network``). Test helpers live
in ``tests/support`` (``barrier_runtime_testing.channels``). The endpoints
satisfy the ``InputChannel``/``OutputChannel`` protocols of
``barrier_runtime.task.channel``, like the in-process channels. In-process
channels live in ``barrier_runtime.task.channel``.
"""

from barrier_runtime.channels.endpoints import (
    Item,
    RemoteInputChannel,
    RemoteOutputChannel,
    Wakeable,
)
from barrier_runtime.channels.errors import (
    ChannelClosedError,
    FrameError,
    HandshakeRejectedError,
    PeerUnreachableError,
)
from barrier_runtime.channels.messages import END_OF_PARTITION, CancelMarker, EndOfPartition
from barrier_runtime.channels.network import WorkerNetwork

__all__ = [
    "END_OF_PARTITION",
    "CancelMarker",
    "ChannelClosedError",
    "EndOfPartition",
    "FrameError",
    "HandshakeRejectedError",
    "Item",
    "PeerUnreachableError",
    "RemoteInputChannel",
    "RemoteOutputChannel",
    "Wakeable",
    "WorkerNetwork",
]
