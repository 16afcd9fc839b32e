"""Step 4 and the tail of step 5: talking to the metadata store.

Turns the store's exceptions (the port's own,
:mod:`barrier_runtime.core.store_errors`, which storage adapters raise) into a
:class:`CommitResult` the coordinator can record (every failure is
``STORAGE_FAILURE`` with a message that says what broke), and runs retention
so that its failure never fails a completed checkpoint. Called outside the coordinator's lock.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from barrier_runtime.checkpoint import protocols
from barrier_runtime.core import metadata, store_errors

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CommitResult:
    """Where the checkpoint was committed, or why it could not be."""

    path: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def commit(store: protocols.MetadataStore, document: metadata.CheckpointMetadata) -> CommitResult:
    """Write ``document`` as the checkpoint's ``_metadata``; never raises."""
    checkpoint_id = document.checkpoint_id
    try:
        return CommitResult(path=store.commit(document))
    except store_errors.CheckpointIdTakenError as exc:
        return CommitResult(
            error=f"checkpoint {checkpoint_id} was already committed by another coordinator "
            f"(is a second driver running for this job?): {exc}"
        )
    except store_errors.MetadataStoreError as exc:
        return CommitResult(error=f"could not commit checkpoint {checkpoint_id}: {exc}")
    except Exception as exc:
        _log.exception("unexpected error committing checkpoint %d", checkpoint_id)
        return CommitResult(
            error=f"unexpected error committing checkpoint {checkpoint_id}: {exc!r}"
        )


def apply_retention(store: protocols.MetadataStore, retained: int, after_id: int) -> None:
    """Prune old checkpoints; a storage failure is logged, it does not fail anything."""
    try:
        store.apply_retention(retained)
    except store_errors.MetadataStoreError as exc:
        _log.warning(
            "retention after checkpoint %d failed (retried after the next one): %s",
            after_id,
            exc,
        )
