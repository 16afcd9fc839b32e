"""The messages that travel on a channel between two subtasks.

A channel carries, in order: data batches, barriers, cancellation markers and
finally one end-of-partition marker. The network transport (Spark issue)
frames these as DATA (Arrow IPC), BARRIER, CANCEL and END_OF_PARTITION.
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
