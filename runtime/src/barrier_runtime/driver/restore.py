"""What an attempt starts from: the restore point, and re-committing its sink transactions.

Step 1 of every attempt (see :class:`~barrier_runtime.driver.job_driver.JobDriver`):
the first attempt restores what the user named (``restore_from``), later ones the
newest usable checkpoint in the store; with none, the attempt starts from empty
state only when the store holds no checkpoint of the job or the user allowed a
fresh start. A caller that already chose (and verified) the first attempt's
restore point before starting anything expensive (``cjob``'s pre-flight) hands it
over as a :class:`Decided`, so the state objects are not read twice. The
restored checkpoint's pre-committed sink transactions are then committed again:
the checkpoint completed, so its output must be visible, and sinks commit
idempotently.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from barrier_runtime.api import dataflow
from barrier_runtime.core import faults, metadata
from barrier_runtime.storage import checkpoint_store

log = logging.getLogger("barrier_runtime.driver.job_driver")


@dataclass(frozen=True, slots=True)
class Decided:
    """The first attempt's restore point, chosen by the rule of
    :meth:`~barrier_runtime.storage.checkpoint_store.CheckpointStore.select_restore_point`
    before the job started; ``checkpoint`` ``None``: start from empty state."""

    checkpoint: metadata.CheckpointMetadata | None


@dataclass(frozen=True, slots=True)
class CheckpointIds:
    """Where a driver's checkpoint ids start, and why some ids are never seen.

    Ids strictly increase across restarts and drivers: a new driver starts after the
    highest id any earlier one used (completed, failed, or left half-written when it
    died). ``skipped`` are the ids above the newest completed checkpoint that an earlier
    driver reserved and never completed: no event of this driver names them.
    """

    first_id: int
    latest_completed: int | None
    skipped: tuple[int, ...]


def checkpoint_ids(store: checkpoint_store.CheckpointStore) -> CheckpointIds:
    """The :class:`CheckpointIds` of a driver starting on ``store`` now."""
    highest = store.highest_checkpoint_id()
    completed = max((m.checkpoint_id for m in store.list_completed()), default=None)
    after = 0 if completed is None else completed
    ids = CheckpointIds(highest + 1, completed, tuple(range(after + 1, highest + 1)))
    if ids.skipped:
        log.info(
            "checkpoint ids continue at %d after checkpoint %s; %s reserved by an earlier "
            "driver and never completed: skipped",
            ids.first_id,
            completed,
            ", ".join(map(str, ids.skipped)),
        )
    return ids


def restore_point(
    store: checkpoint_store.CheckpointStore,
    number: int,
    *,
    restore_from: int | str | None,
    allow_fresh_start: bool,
    decided: Decided | None = None,
) -> metadata.CheckpointMetadata | None:
    """Announced: what attempt ``number`` restores, or that it starts empty."""
    chosen: metadata.CheckpointMetadata | None
    if number == 0 and decided is not None:
        chosen = decided.checkpoint
    elif number == 0 and restore_from is not None:
        chosen = store.load(restore_from)
    else:
        chosen = store.select_restore_point(allow_fresh_start=allow_fresh_start)
    if chosen is not None:
        log.info(
            "attempt %d restores %s %d from %s",
            number,
            chosen.kind.value,
            chosen.checkpoint_id,
            store.describe(),
        )
    else:
        log.info(
            "attempt %d starts from empty state: no checkpoint of the job in %s",
            number,
            store.describe(),
        )
    return chosen


def recommit(
    flow: dataflow.Dataflow,
    restore: metadata.CheckpointMetadata,
    injector: faults.FaultInjector,
    number: int,
) -> None:
    """Commit again every sink transaction ``restore`` recorded (idempotent in the sinks)."""
    sinks = flow.transactional_sinks()
    for step_id, txns in restore.sink_transactions.items():
        sink = sinks.get(step_id)
        if sink is None or not txns:
            continue
        injector.check(
            faults.FaultPoint.COMMIT,
            task="<restore>",
            subtask=0,
            attempt=number,
            checkpoint_id=restore.checkpoint_id,
        )
        sink.commit_restored(txns)
