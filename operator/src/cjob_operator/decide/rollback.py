"""Rollback of a spec change that never proves itself (``spec.rollback``), purely decided.

A spec change that redeploys the driver is ``Verifying`` (``status.rollout``) until the
job runs with a completed checkpoint, then ``Stable`` and recorded as
``status.lastStableSpec`` (:mod:`cjob_operator.rollout`). With ``spec.rollback.enabled``,
a spec still ``Verifying`` after ``spec.rollback.timeout`` is rolled back, as the Flink
operator does:

- :func:`check` records ``RolledBack`` and a deploy intent restoring the latest
  completed checkpoint (it may replace a deploy intent still backing off, never a stop
  taking a final savepoint); when no rollback is possible it records ``Unstable`` and
  says why, once;
- :func:`deployed_spec` is what every deploy builds the driver from while
  ``RolledBack``: the last stable spec, for restarts and nonces too, until the spec
  changes again (that change is ``Verifying`` and deploys as usual).

``status.lastReconciledSpec`` keeps the user's spec while rolled back, so the same spec
is not upgraded to again and again.

No I/O, no kopf, no kubernetes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cjob_operator.model import changes, enums, intent, observation, spec, status
from cjob_operator.model.action import Action, ActionKind
from cjob_operator.model.durations import format_duration
from cjob_operator.model.enums import ChangeKind, Phase, RolloutState
from cjob_operator.model.reasons import Reason

REASON = Reason.ROLLED_BACK


def check(obs: observation.Observation, sp: spec.JobSpec) -> Action | None:
    """A rollback (or the verdict that none is possible), or ``None`` to decide as usual."""
    rollout = obs.status.rollout
    if not sp.rollback.enabled or rollout is None or rollout.state is not RolloutState.VERIFYING:
        return None
    if obs.now - rollout.since < sp.rollback.timeout or sp.state is enums.DesiredState.SUSPENDED:
        return None
    pending = obs.status.intent
    if pending is not None and pending.op is intent.IntentOp.STOP:
        return None
    waited = format_duration(sp.rollback.timeout)
    late = (
        f"the spec did not run with a completed checkpoint within {waited} (spec.rollback.timeout)"
    )
    stable, current = obs.status.last_stable_spec, obs.status.last_reconciled_spec
    if stable is None or current is None:
        return _unstable(obs, f"{late}; there is no stable spec to roll back to")
    diff = changes.classify(stable, current)
    if diff.kind is not ChangeKind.UPGRADE:
        return _unstable(obs, f"{late}; it is the last stable spec, nothing to roll back to")
    if _storage(stable) != _storage(current):
        return _unstable(
            obs,
            f"{late}; not rolling back: spec.storage changed since the last "
            "stable spec, so its checkpoints are elsewhere",
        )
    fields = ", ".join(diff.upgrade_paths[:6])
    message = (
        f"{late}: rolling back ({fields}) to the last stable spec from the latest "
        "checkpoint; change the spec to try again"
    )
    prev = obs.status.restarts
    return Action.schedule(
        intent.Intent.deploy(
            f"b-{obs.generation}-{int(obs.now * 1000):x}",
            REASON,
            obs.now,
            intent.RestoreTarget.latest(),
        ),
        Phase.UPGRADING,
        message,
        warning=True,
        rollout=status.RolloutStatus(RolloutState.ROLLED_BACK, obs.now, message),
        restarts=status.RestartsStatus(
            count=prev.count, last_time=prev.last_time, last_reason=prev.last_reason
        ),
    )


def _unstable(obs: observation.Observation, message: str) -> Action:
    return Action(
        ActionKind.NOTHING,
        obs.status.phase,
        Reason.ROLLBACK_IMPOSSIBLE,
        message,
        warning=True,
        event=True,
        rollout=status.RolloutStatus(RolloutState.UNSTABLE, obs.now, message),
    )


def _storage(doc: Mapping[str, Any]) -> Any:
    return doc.get("storage")


def deployed_spec(obs: observation.Observation) -> spec.JobSpec | None:
    """The spec to deploy instead of the current one: the last stable spec while rolled back."""
    rollout, stable = obs.status.rollout, obs.status.last_stable_spec
    if rollout is None or rollout.state is not RolloutState.ROLLED_BACK or stable is None:
        return None
    try:
        return spec.JobSpec.from_storage(stable)
    except spec.SpecError:
        return None
