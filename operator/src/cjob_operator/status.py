"""The next status, computed from what was observed, decided and done (pure).

:func:`write_ahead` is what to persist *before* acting on an action that records an
intent; :func:`next_status` the single patch after acting. The savepoint history and
the nonce acknowledgements are kept by :mod:`cjob_operator.ledger`.

Also :func:`merge_patch`: the minimal RFC 7386 merge patch from the stored status
to the new one, empty when nothing changed (so unchanged statuses are not written).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cjob_operator import ledger
from cjob_operator import rollout as rollout_mod
from cjob_operator.model import observation, status
from cjob_operator.model.action import Action, ActionKind
from cjob_operator.model.enums import DriverState, Phase
from cjob_operator.model.outcome import Outcome

PROGRESSING = {Phase.DEPLOYING, Phase.UPGRADING, Phase.RESTARTING, Phase.SUSPENDING, Phase.DELETING}
STALE_INTERVALS = 3
KEEPS_ERROR = {Phase.FAILED, Phase.RESTARTING}


def _newest(*items: status.CompletedCheckpoint | None) -> status.CompletedCheckpoint | None:
    present = [i for i in items if i is not None]
    return max(present, key=lambda c: c.id) if present else None


def _completed(info: observation.CheckpointInfo | None) -> status.CompletedCheckpoint | None:
    if info is None:
        return None
    return status.CompletedCheckpoint(
        info.id,
        info.path,
        info.time,
        info.duration_seconds,
        info.size_bytes,
        info.trigger or info.kind.value,
        info.uploaded_bytes,
    )


def checkpoints(obs: observation.Observation, outcome: Outcome) -> status.CheckpointsStatus:
    old = obs.status.checkpoints
    c = obs.control if obs.control and obs.control.reachable else None
    store = obs.store if obs.store and obs.store.readable else None
    last = _newest(
        old.last_completed,
        _completed(c.latest_completed if c else None),
        _completed(store.latest_checkpoint if store else None),
    )
    failed = old.last_failed
    if c and c.latest_failed:
        failed = status.FailedCheckpoint(
            c.latest_failed.id, c.latest_failed.reason, c.latest_failed.time
        )
    savepoint = outcome.savepoint or old.last_savepoint
    found = store.latest_savepoint if store else None
    if found and found.path and (savepoint is None or (savepoint.id or -1) < found.id):
        savepoint = status.SavepointRef(found.id, found.path, found.time)
    return status.CheckpointsStatus(
        last_completed=last,
        last_failed=failed,
        consecutive_failures=c.consecutive_failures if c else old.consecutive_failures,
        last_savepoint=savepoint,
        shared_bytes=store.shared_bytes if store else old.shared_bytes,
    )


def _condition(
    obs: observation.Observation, ctype: str, value: bool | None, reason: str, message: str
) -> status.Condition:
    text = "Unknown" if value is None else ("True" if value else "False")
    previous = obs.status.condition(ctype)
    since = previous.last_transition_time if previous and previous.status == text else obs.now
    return status.Condition(ctype, text, reason, message, since, obs.generation)


def checkpoint_health(
    obs: observation.Observation, phase: Phase, cps: status.CheckpointsStatus
) -> tuple[bool | None, str, str]:
    if phase is not Phase.RUNNING or obs.spec is None:
        return None, "NotRunning", f"the job is {phase.value}"
    cp = obs.spec.checkpointing
    if cps.consecutive_failures > cp.tolerable_failures:
        return (
            False,
            "TooManyFailures",
            (
                f"{cps.consecutive_failures} consecutive checkpoint failures "
                f"(tolerableFailures {cp.tolerable_failures})"
            ),
        )
    started = obs.driver.started_at
    last = cps.last_completed.time if cps.last_completed else None
    reference = last if last is not None and (started is None or last >= started) else started
    if reference is not None and obs.now - reference > STALE_INTERVALS * cp.interval:
        age = int(obs.now - reference)
        return (
            False,
            "CheckpointsStale",
            (f"no checkpoint completed for {age}s (more than {STALE_INTERVALS} intervals)"),
        )
    return True, "CheckpointsCompleting", "checkpoints complete on schedule"


def write_ahead(obs: observation.Observation, action: Action) -> status.JobStatus | None:
    """The status to persist before acting, if the action records an intent: the intent
    with the reconciled spec, restart bookkeeping and the nonce it acts on."""
    if action.intent is None or action.intent == obs.status.intent:
        return None
    old = obs.status
    return old.evolve(
        intent=action.intent,
        restarts=action.restarts or old.restarts,
        last_reconciled_spec=action.reconciled_spec
        if action.reconciled_spec is not None
        else old.last_reconciled_spec,
        phase=action.phase or old.phase,
        nonces=ledger.acknowledge(obs, action, Outcome()),
        rollout=rollout_mod.accepting(obs, action),
    )


def next_status(obs: observation.Observation, action: Action, outcome: Outcome) -> status.JobStatus:
    old = obs.status
    phase = action.phase or old.phase or Phase.PENDING
    new_intent = None if action.clear_intent else outcome.intent or action.intent or old.intent
    if action.kind in (ActionKind.FAIL, ActionKind.REJECT) or (
        action.kind in (ActionKind.WAIT, ActionKind.SCHEDULE) and action.warning
    ):
        error: str | None = action.message
    elif outcome.error:
        error = outcome.error
    elif action.kind is ActionKind.SCHEDULE:
        error = None  # a new start the user asked for (create, upgrade, resume, nonce)
    else:
        # Why the job failed, or why it is being restarted (e.g. the driver's one-line
        # refusal of its configuration), stays until the job runs again.
        error = old.error if phase in KEEPS_ERROR else None
    cps = checkpoints(obs, outcome)
    d = obs.driver
    driver = status.DriverStatus(
        pod=d.pod_name if d.pod_name else None,
        service=old.driver.service or (f"{obs.name}-driver" if d.pod_name else None),
        start_time=d.started_at if d.pod_name else None,
    )
    health = checkpoint_health(obs, phase, cps)
    ready = _ready(obs, action, phase, error)
    history = ledger.savepoints_after(obs, action, outcome)
    nonces = ledger.settle_nonces(
        obs, ledger.acknowledge(obs, action, outcome), phase, new_intent, error, history
    )
    conditions = (
        _condition(obs, "Ready", phase is Phase.RUNNING, ready[0], ready[1]),
        _condition(obs, "CheckpointHealthy", health[0], health[1], health[2]),
        _condition(
            obs,
            "Progressing",
            phase in PROGRESSING,
            str(action.reason or phase.value) if phase in PROGRESSING else phase.value,
            (action.message or f"the job is {phase.value}")
            if phase in PROGRESSING
            else f"the job is {phase.value}",
        ),
    )
    new = old.evolve(
        phase=phase,
        conditions=conditions,
        observed_generation=old.observed_generation
        if action.kind is ActionKind.REJECT
        else obs.generation,
        driver=driver,
        checkpoints=cps,
        restarts=action.restarts or old.restarts,
        last_reconciled_spec=action.reconciled_spec
        if action.reconciled_spec is not None
        else old.last_reconciled_spec,
        intent=new_intent,
        error=error,
        job_state=job_state(obs),
        savepoints=history,
        nonces=nonces,
    )
    rollout, stable = rollout_mod.after(obs, action, new, health[0])
    return new.evolve(rollout=rollout, last_stable_spec=stable)


def _ready(
    obs: observation.Observation, action: Action, phase: Phase, error: str | None
) -> tuple[str, str]:
    """Reason and message of the ``Ready`` condition: a job that is not running because of
    a problem (``status.error``) says which, with the problem's reason (``InvalidSpec``,
    ``StorageUnavailable``, …), so ``kubectl describe cjob`` shows it."""
    if phase is Phase.RUNNING:
        return "Running", "the job is running"
    if not error:
        return phase.value, f"the job is {phase.value}"
    if action.warning and action.reason is not None and action.message == error:
        return str(action.reason), error
    previous = obs.status.condition("Ready")
    if previous is not None and previous.message == error:
        return previous.reason, error  # the same problem, reported by an earlier loop
    return phase.value, error


_SETTLED_JOB_STATES = frozenset({"STOPPED", "FINISHED", "FAILED"})


def job_state(obs: observation.Observation) -> str | None:
    """``status.jobState``: what the driver's control API says; once the driver has
    exited, what its exit says (a stopped driver is not ``RESTARTING`` any more)."""
    if obs.control is not None and obs.control.reachable:
        return obs.control.job_state
    d = obs.driver
    old = obs.status.job_state
    if d.pod_name is None:
        return None
    if old in _SETTLED_JOB_STATES:
        return old
    if d.state is DriverState.FAILED:
        return "FAILED"
    if d.state is DriverState.SUCCEEDED:
        return "STOPPED" if old == "STOPPING" else "FINISHED"
    return old


def merge_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The RFC 7386 patch turning ``old`` into ``new`` (``{}`` when equal).

    >>> merge_patch({"a": 1, "b": {"c": 2, "d": 3}}, {"a": 1, "b": {"c": 2}})
    {'b': {'d': None}}
    """
    patch: dict[str, Any] = {}
    for key in set(old) | set(new):
        before, after = old.get(key), new.get(key)
        if before == after:
            continue
        if isinstance(before, Mapping) and isinstance(after, Mapping):
            patch[key] = merge_patch(before, after)
        else:
            patch[key] = after
    return patch


def storable(st: status.JobStatus) -> dict[str, Any]:
    """The stored form without ``None`` values (absent keys read as ``None`` anyway)."""
    return {k: v for k, v in st.for_storage().items() if v is not None}
