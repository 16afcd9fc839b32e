"""What a running driver is asked for: on-demand snapshots, periodic savepoints, retention.

Part of the pure decision. :func:`triggers` asks, in this order, for the savepoint or
checkpoint a trigger nonce requests, then deletes periodic savepoints beyond retention,
then triggers a periodic savepoint when one is due. The driver paces checkpoints;
savepoints on a schedule (``spec.savepoints``) are the operator's, as in the Flink
operator. Two policies, each a question about one observation:

- :func:`periodic_due`: is a periodic savepoint due? The interval counts from the
  trigger of the previous periodic savepoint, or from the driver's start before the
  first; one savepoint at a time; a periodic savepoint that failed is tried again
  after :data:`RETRY_AFTER` (or the interval, if shorter).
- :func:`beyond_retention`: which completed periodic savepoints are older than the
  newest ``retained`` ones and may be deleted. Only periodic savepoints the history
  knows are ever candidates (never manual ones, never the final savepoints of
  upgrades and suspensions), and never one a restore may still need
  (``spec.restoreFrom``, the pending intent's restore point, ``lastSavepoint``).

No I/O, no kopf, no kubernetes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from barrier_runtime.core import layout, types
from cjob_operator.decide import lifecycle
from cjob_operator.model import observation, savepoints, spec
from cjob_operator.model.action import Action
from cjob_operator.model.durations import format_duration
from cjob_operator.model.enums import NonceField, Phase, SavepointKind, SavepointState
from cjob_operator.model.reasons import Reason

RETRY_AFTER = 60.0


def periodic_due(obs: observation.Observation, sp: spec.JobSpec) -> bool:
    interval = sp.savepoints.interval
    history = obs.status.savepoints
    if interval is None or history.in_progress:
        return False
    last = history.last_periodic_trigger_time
    since = last if last is not None else obs.driver.started_at
    if since is None:
        return False
    periodic = [r for r in history.history if r.kind is SavepointKind.PERIODIC]
    if last is not None and periodic and periodic[-1].state is SavepointState.FAILED:
        interval = min(interval, RETRY_AFTER)
    return obs.now - since >= interval


def beyond_retention(
    obs: observation.Observation, sp: spec.JobSpec
) -> tuple[savepoints.SavepointRecord, ...]:
    completed = sorted(
        (
            r
            for r in obs.status.savepoints.history
            if r.kind is SavepointKind.PERIODIC
            and r.id is not None
            and r.state is SavepointState.COMPLETED
        ),
        key=lambda r: r.id or 0,
    )
    older = completed[: -sp.savepoints.retained] if sp.savepoints.retained else completed
    return tuple(r for r in older if not _needed(obs, sp, r))


def _needed(
    obs: observation.Observation, sp: spec.JobSpec, rec: savepoints.SavepointRecord
) -> bool:
    """Whether a restore may still name ``rec``."""
    ids: set[int | None] = set()
    paths: set[str | None] = set()
    if sp.restore_from is not None:
        paths.add(sp.restore_from.path)
    pending = obs.status.intent
    if pending is not None:
        ids.add(pending.restore.checkpoint_id)
        paths.add(pending.restore.path)
    last = obs.status.checkpoints.last_savepoint
    if last is not None:
        ids.add(last.id)
        paths.add(last.path)
    named = {p.rstrip("/") for p in paths if p}
    return (
        rec.id in ids
        or (rec.path is not None and rec.path.rstrip("/") in named)
        or any(_names_savepoint(p, rec.id) for p in named)
    )


def triggers(
    obs: observation.Observation, sp: spec.JobSpec, accepted: Mapping[str, Any] | None
) -> Action:
    last = dict(lifecycle.last(obs))
    if lifecycle.changed(obs, sp, NonceField.SAVEPOINT_TRIGGER):
        last[NonceField.SAVEPOINT_TRIGGER.value] = sp.nonces.savepoint_trigger
        return Action.trigger(
            types.CheckpointKind.SAVEPOINT,
            Reason.SAVEPOINT_TRIGGERED,
            "savepoint requested (savepointTriggerNonce)",
            reconciled_spec=last,
            nonce=NonceField.SAVEPOINT_TRIGGER,
        )
    if lifecycle.changed(obs, sp, NonceField.CHECKPOINT_TRIGGER):
        last[NonceField.CHECKPOINT_TRIGGER.value] = sp.nonces.checkpoint_trigger
        return Action.trigger(
            types.CheckpointKind.CHECKPOINT,
            Reason.MANUAL_CHECKPOINT_TRIGGERED,
            "checkpoint requested (checkpointTriggerNonce)",
            reconciled_spec=last,
            nonce=NonceField.CHECKPOINT_TRIGGER,
        )
    # Periodic checkpoints are the driver's: its coordinator paces them (interval,
    # minPause, maxConcurrent, timeout) from job.json, as Flink's JobManager does, to the
    # millisecond and even while the operator is down. The operator asks for the
    # on-demand ones above and for periodic savepoints (spec.savepoints).
    # Retention before the next periodic savepoint: a discard is done in one action,
    # while with a short interval a periodic savepoint is due at almost every reconcile.
    old = beyond_retention(obs, sp)
    if old:
        ids = ", ".join(str(r.id) for r in old)
        return Action.discard_savepoints(
            old,
            f"deleting periodic savepoints {ids}: beyond spec.savepoints.retained "
            f"({sp.savepoints.retained})",
            reconciled_spec=accepted,
        )
    if periodic_due(obs, sp):
        every = format_duration(sp.savepoints.interval or 0.0)
        return Action.trigger(
            types.CheckpointKind.SAVEPOINT,
            Reason.PERIODIC_SAVEPOINT_TRIGGERED,
            f"periodic savepoint (every {every})",
            reconciled_spec=accepted,
            savepoint_kind=SavepointKind.PERIODIC,
        )
    return Action.nothing(Phase.RUNNING, reconciled_spec=accepted)


def _names_savepoint(path: str, savepoint_id: int | None) -> bool:
    reference = layout.parse_reference(path)
    return (
        savepoint_id is not None
        and reference is not None
        and reference.kind is types.CheckpointKind.SAVEPOINT
        and reference.checkpoint_id == savepoint_id
    )
