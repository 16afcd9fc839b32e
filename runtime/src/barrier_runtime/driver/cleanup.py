"""What failed and aborted checkpoints leave in the store, removed once no writer is left.

A checkpoint that does not complete leaves its directory behind: the state
objects its subtasks uploaded before it was aborted (declined, timed out, a
subtask crashed), objects that late uploads still finish after it was
aborted, and temporary files or incomplete multipart uploads of writers killed
mid-write (which no listing shows). Retention removes old directories without
``_metadata`` while the job runs, but it cannot know which uploads are still
going, and it never sees a killed writer's debris. So the driver cleans up when
nothing of the job can still write: after a failed attempt was torn down (its
subtasks stopped, its upload pools drained, its pending checkpoints aborted)
and when the job ends, however it ends
(:meth:`~barrier_runtime.storage.checkpoint_store.CheckpointStore.discard_unfinished`).

A failed cleanup never changes how the job ends: it is logged, and the next one
(the next attempt's, or the next run's) tries again.
"""

from __future__ import annotations

import logging

from barrier_runtime.checkpoint import coordinator as coordinator_mod
from barrier_runtime.core import types
from barrier_runtime.storage import checkpoint_store, errors

log = logging.getLogger(__name__)


def discard_unfinished(
    store: checkpoint_store.CheckpointStore,
    coordinator: coordinator_mod.CheckpointCoordinator,
    reason: types.FailureReason,
) -> None:
    """Abort what is still pending (``reason``; commits in flight settle first), then delete
    every checkpoint directory without ``_metadata`` and the debris of unfinished writes."""
    coordinator.abort_all_pending(reason)
    try:
        discarded = store.discard_unfinished()
    except errors.StorageError as exc:
        log.warning("could not remove unfinished checkpoints from %s: %s", store.describe(), exc)
        return
    if discarded:
        log.debug(
            "removed what unfinished checkpoints left in %s: %s",
            store.describe(),
            ", ".join(map(str, discarded)),
        )
