"""Barrier alignment: the barrier handler of one task's input gate.

Pure protocol logic, no I/O and no threads: the task executor feeds it what it
reads from its input channels (barriers, cancellations, end of partition, and
a call per data batch) and the handler answers through a narrow controller
(block a channel, resume all, snapshot, channel state complete, abort).
Explicit state machines, one small class per state (``states``), with the
cross-cutting rules in :class:`BarrierHandler` (``handler``, which opens with
the protocol essay). A recording controller for tests lives in
``tests/support`` (``barrier_runtime_testing.alignment``), not here.
"""

from barrier_runtime.alignment.controller import (
    AlignmentContext,
    BarrierHandlerController,
    ChannelId,
)
from barrier_runtime.alignment.errors import ChannelBlockedError, CorruptStreamError
from barrier_runtime.alignment.handler import BarrierHandler, BarrierResult, create_barrier_handler
from barrier_runtime.alignment.policy import AlignmentMode, AlignmentPolicy
from barrier_runtime.alignment.states import (
    BarrierHandlerState,
    CollectingBarriers,
    CollectingBarriersUnaligned,
    TrackingBarriers,
    WaitingForFirstBarrier,
)

__all__ = [
    "AlignmentContext",
    "AlignmentMode",
    "AlignmentPolicy",
    "BarrierHandler",
    "BarrierHandlerController",
    "BarrierHandlerState",
    "BarrierResult",
    "ChannelBlockedError",
    "ChannelId",
    "CollectingBarriers",
    "CollectingBarriersUnaligned",
    "CorruptStreamError",
    "TrackingBarriers",
    "WaitingForFirstBarrier",
    "create_barrier_handler",
]
