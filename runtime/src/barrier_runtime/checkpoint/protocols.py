"""The coordinator's two seams: the tasks it talks to and the store it commits to.

Both are called *outside* the coordinator's lock, from whichever thread drove
the event (a task thread delivering the last acknowledgement, the driver's
tick thread, an HTTP handler). Implementations must be thread-safe and must
not assume they run on a particular thread.
"""

from __future__ import annotations

from typing import Protocol

from barrier_runtime.core import metadata as checkpoint_metadata
from barrier_runtime.core import types


class TaskGateway(Protocol):
    """Delivers the coordinator's messages to every subtask of the running job."""

    def trigger(self, barrier: types.Barrier) -> None:
        """Deliver ``barrier`` to every subtask: sources inject it, other tasks note it.

        Raise if the barrier cannot be delivered (tasks not running): the
        coordinator then aborts the checkpoint with ``TASKS_NOT_RUNNING``.
        """
        ...

    def notify_complete(self, metadata: checkpoint_metadata.CheckpointMetadata) -> None:
        """Checkpoint ``metadata.checkpoint_id`` is committed: sinks commit its transactions.

        Sent at most once per id, possibly out of id order when commits overlap;
        as in Flink, ``complete(n)`` means "everything up to *n* is durable".
        """
        ...

    def notify_aborted(
        self, checkpoint_id: types.CheckpointId, reason: types.FailureReason
    ) -> None:
        """Checkpoint ``checkpoint_id`` will never complete: drop what belongs to it.

        Sent exactly once per aborted id, never for an id that completed.
        """
        ...


class MetadataStore(Protocol):
    """Commits checkpoint metadata (the ``_metadata`` object, written last)."""

    def commit(self, metadata: checkpoint_metadata.CheckpointMetadata) -> str:
        """Write ``_metadata`` with a conditional put; return the checkpoint's path.

        Raises :class:`~barrier_runtime.core.store_errors.CheckpointIdTakenError` if
        that id is already committed, another
        :class:`~barrier_runtime.core.store_errors.MetadataStoreError` on any other failure.
        """
        ...

    def apply_retention(self, retained: int) -> None:
        """Keep the newest ``retained`` checkpoints; may raise ``MetadataStoreError``."""
        ...
