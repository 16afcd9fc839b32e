"""One reconcile loop: observe → decide → (write intent) → act → one status patch → events.

The intent is written to the status *before* acting (write-ahead), together with
the reconciled spec and restart bookkeeping; everything else goes into a single
final status patch, skipped when nothing changed.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Mapping
from typing import Any

from cjob_operator import ledger, metrics
from cjob_operator import observe as observe_mod
from cjob_operator import status as status_mod
from cjob_operator.act import control, events, kube, perform
from cjob_operator.decide import decide
from cjob_operator.model import observation, status
from cjob_operator.model import outcome as outcome_mod
from cjob_operator.model.action import Action, ActionKind
from cjob_operator.model.reasons import Reason

logger = logging.getLogger(__name__)


async def _patch_status(
    tools: perform.Tools, old: Mapping[str, Any], new: Mapping[str, Any]
) -> bool:
    patch = status_mod.merge_patch(old, new)
    if not patch:
        return False
    job = tools.job
    await tools.kube.patch(
        "CheckpointedJob", job.namespace, job.name, {"status": patch}, subresource="status"
    )
    return True


async def reconcile(
    tools: perform.Tools, body: Mapping[str, Any], now: float | None = None
) -> tuple[observation.Observation, Action]:
    obs = await observe_mod.observe(
        tools, body, time.time() if now is None else now, random.Random()
    )
    action = decide(obs)
    stored = status_mod.storable(obs.status)
    ahead = status_mod.write_ahead(obs, action)
    if ahead is not None:
        written = status_mod.storable(ahead)
        await _patch_status(tools, stored, written)
        stored = written
    try:
        outcome = await perform.perform(tools, obs, action)
    except (kube.KubeError, control.ControlApiError) as exc:
        # Reported in the status and as an Event; the intent stays, the next loop retries.
        metrics.RECONCILE_ERRORS.labels(obs.namespace, obs.name).inc()
        outcome = outcome_mod.Outcome(error=f"{action.kind.value} failed: {exc}")
    new = status_mod.next_status(obs, action, outcome)
    await _patch_status(tools, stored, status_mod.storable(new))
    interval = obs.spec.checkpointing.interval if obs.spec is not None else None
    metrics.record_status(obs.namespace, obs.name, obs.status, new, interval=interval)
    await _announce(tools, obs, action, outcome, new)
    summary = f"{action.kind.value} {action.message}".strip()
    if outcome.error:
        logger.warning("%s/%s: %s (error: %s)", obs.namespace, obs.name, summary, outcome.error)
    elif summary != tools.memory.extra.get("last_summary"):
        logger.log(
            logging.DEBUG if action.kind is ActionKind.NOTHING else logging.INFO,
            "%s/%s: %s",
            obs.namespace,
            obs.name,
            summary,
        )
    tools.memory.extra["last_summary"] = summary
    return obs, action


async def _announce(
    tools: perform.Tools,
    obs: observation.Observation,
    action: Action,
    outcome: outcome_mod.Outcome,
    new: status.JobStatus,
) -> None:
    async def post(warning: bool, reason: str, message: str) -> None:
        await events.post(
            tools.kube, obs.namespace, obs.name, obs.uid, warning, str(reason), message
        )

    # A problem (a warning action: an invalid spec, an unreachable store, …) is posted
    # once when it appears, not again on every loop while it stands in status.error.
    standing = action.warning and action.message == obs.status.error
    if (action.event or action.warning) and action.reason and not standing:
        await post(action.warning, action.reason, action.message)
    if outcome.error:
        await post(True, Reason.ACTION_FAILED, outcome.error)
    if outcome.savepoint is not None:
        await post(
            False, Reason.SAVEPOINT_COMPLETED, f"savepoint written to {outcome.savepoint.path}"
        )
    if new.phase is not obs.status.phase and new.phase is not None:
        before = obs.status.phase.value if obs.status.phase else "None"
        await post(False, new.phase.value, f"phase {before} -> {new.phase.value}")
    failed = new.checkpoints.last_failed
    if failed is not None and failed != obs.status.checkpoints.last_failed:
        await post(
            True, Reason.CHECKPOINT_FAILED, f"checkpoint {failed.id} failed: {failed.reason}"
        )
    for warning, reason, message in ledger.events(obs.status, new):
        await post(warning, reason, message)
