"""Whether the deployed spec has proven itself: ``status.rollout`` and ``status.lastStableSpec``.

Pure (no I/O, no kopf, no kubernetes), called by :mod:`cjob_operator.status`, in the
pattern of :mod:`cjob_operator.ledger`: a spec change that redeploys the driver is
``Verifying`` from the moment it is accepted (written ahead with its intent); once the
job runs, no intent is pending, checkpoints are healthy and one completed after the
driver started, the spec is ``Stable`` and recorded as the last stable spec (also after
``Unstable``: late is better than never). ``RolledBack`` and ``Unstable`` are decided
(:mod:`cjob_operator.decide.rollback`); ``RolledBack`` lasts until the spec changes
(the job then runs the last stable spec, never recorded as stable again).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cjob_operator.model import changes, observation, status
from cjob_operator.model.action import Action
from cjob_operator.model.enums import ChangeKind, Phase, RolloutState


def accepting(obs: observation.Observation, action: Action) -> status.RolloutStatus | None:
    """``status.rollout`` once ``action`` is recorded: a decided one, ``Verifying`` when the
    reconciled spec changes what the driver runs, otherwise unchanged."""
    if action.rollout is not None:
        return action.rollout
    old, new = obs.status.last_reconciled_spec, action.reconciled_spec
    if new is not None and (old is None or changes.classify(old, new).kind is ChangeKind.UPGRADE):
        return status.RolloutStatus(
            RolloutState.VERIFYING,
            obs.now,
            "deployed; stable once it runs with a completed checkpoint",
        )
    return obs.status.rollout


def after(
    obs: observation.Observation, action: Action, new: status.JobStatus, healthy: bool | None
) -> tuple[status.RolloutStatus | None, Mapping[str, Any] | None]:
    """``(status.rollout, status.lastStableSpec)`` after this reconcile."""
    rollout = accepting(obs, action)
    unproven = rollout is None or rollout.state in (RolloutState.VERIFYING, RolloutState.UNSTABLE)
    if unproven and _proven(obs, new, healthy) and new.last_reconciled_spec is not None:
        return (
            status.RolloutStatus(
                RolloutState.STABLE,
                obs.now,
                "ran with a completed checkpoint: recorded as lastStableSpec",
            ),
            new.last_reconciled_spec,
        )
    return rollout, obs.status.last_stable_spec


def _proven(obs: observation.Observation, new: status.JobStatus, healthy: bool | None) -> bool:
    started = obs.driver.started_at
    done = new.checkpoints.last_completed
    return (
        new.phase is Phase.RUNNING
        and new.intent is None
        and healthy is True
        and started is not None
        and done is not None
        and done.time is not None
        and done.time >= started
    )
