"""The messages that travel on a channel between two subtasks.

A channel carries, in order: data batches, barriers, cancellation markers,
watermarks and idle statuses, and finally one end-of-partition marker. The
network transport frames these as DATA (Arrow IPC), BARRIER, CANCEL,
WATERMARK, WATERMARK_STATUS and END_OF_PARTITION. Markers never take credits.
"""

from __future__ import annotations

from dataclasses import dataclass

from barrier_runtime.core import types


@dataclass(frozen=True, slots=True)
class CancelMarker:
    """Tells downstream that checkpoint ``checkpoint_id`` (and anything older) is aborted."""

    checkpoint_id: types.CheckpointId


@dataclass(frozen=True, slots=True)
class EndOfPartition:
    """The channel will carry nothing more."""


END_OF_PARTITION = EndOfPartition()


@dataclass(frozen=True, slots=True)
class WatermarkMarker:
    """Event time on this channel reached ``value`` (ms): no record at or before it follows."""

    value: int


@dataclass(frozen=True, slots=True)
class IdleMarker:
    """Every source behind this channel went quiet (``idle``), or one is back."""

    idle: bool


TimeMarker = WatermarkMarker | IdleMarker
"""The markers that carry event time; unaligned channel state keeps them in order with data."""
