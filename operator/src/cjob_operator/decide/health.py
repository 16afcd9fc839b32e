"""Driver health: restarts with backoff, failures for good, restarts the driver made itself.

Part of the pure decision (see :mod:`cjob_operator.decide`): no I/O, no kopf, no
kubernetes. Absent, failed or exited drivers are restarted with an exponential,
capped, jittered backoff (:func:`backoff_delay`) from the newest usable checkpoint,
within ``restartPolicy.maxRestarts`` per window; an exit code in
:data:`barrier_runtime.exit_codes.FINAL` fails the job for good. A running driver is
left to the trigger rules (:func:`cjob_operator.decide.savepoints.triggers`).
"""

from __future__ import annotations

import dataclasses

from barrier_runtime import exit_codes
from cjob_operator.decide import lifecycle, savepoints
from cjob_operator.model import changes, enums, intent, observation, spec, status
from cjob_operator.model.action import Action, ActionKind
from cjob_operator.model.durations import format_duration
from cjob_operator.model.enums import DriverState, Phase
from cjob_operator.model.reasons import Reason


def backoff_delay(policy: spec.RestartPolicySpec, attempt: int, jitter_sample: float) -> float:
    """Delay before restart ``attempt`` (1-based): exponential, capped, with jitter.

    >>> p = spec.RestartPolicySpec(backoff=spec.BackoffSpec(10, 60, 2, 0.0))
    >>> [backoff_delay(p, n, 0.5) for n in (1, 2, 3, 4)]
    [10.0, 20.0, 40.0, 60.0]
    """
    b = policy.backoff
    base = min(b.max, b.initial * b.multiplier ** max(0, attempt - 1))
    return max(0.0, base * (1.0 + b.jitter * (2.0 * jitter_sample - 1.0)))


def by_driver_state(
    obs: observation.Observation, sp: spec.JobSpec, diff: changes.SpecDiff
) -> Action:
    d = obs.driver
    if d.state is DriverState.ABSENT:
        return _restart(obs, sp, Reason.DRIVER_DISAPPEARED, "the driver pod disappeared")
    if d.state is DriverState.FAILED:
        detail = f": {d.message}" if d.message else ""
        what = f"the driver pod {d.pod_name} failed{detail}"
        if d.exit_code in exit_codes.FINAL:
            return _failed_for_good(what, d.exit_code)
        return _restart(obs, sp, Reason.DRIVER_FAILED, what)
    if d.state is DriverState.SUCCEEDED:
        if sp.restart_policy.type is enums.RestartType.ALWAYS:
            return _restart(obs, sp, Reason.DRIVER_EXITED, f"the driver pod {d.pod_name} exited")
        return Action.nothing(Phase.FINISHED, Reason.FINISHED, "the job finished", event=True)
    if d.state is DriverState.TERMINATING:
        return Action.wait(
            obs.status.phase, Reason.DRIVER_TERMINATING, "the driver pod is terminating"
        )
    if d.state is DriverState.PENDING or obs.control is None or not obs.control.ready:
        return _counting_driver_restarts(
            obs,
            sp,
            Action.wait(
                lifecycle.driver_phase(obs), Reason.DRIVER_STARTING, "waiting for the driver"
            ),
        )
    accepted = lifecycle.accepted(obs, sp) if diff.changed else None
    return _counting_driver_restarts(obs, sp, savepoints.triggers(obs, sp, accepted))


def _failed_for_good(what: str, code: int) -> Action:
    """The driver said (by its exit code) that starting it again cannot help."""
    if code == exit_codes.MISTAKE:
        return Action.fail(
            Reason.INVALID_JOB,
            f"{what}; not restarting: the job's pipeline or "
            "configuration must change first (then set spec.restartNonce)",
        )
    return Action.fail(
        Reason.JOB_FAILED,
        f"{what}; not restarting: the driver already restarted "
        "the job as often as a restart could help. Fix the cause, then set "
        "spec.restartNonce",
    )


STATUS_TIME_RESOLUTION = 0.001
"""Timestamps in status are stored to the millisecond."""


def _counting_driver_restarts(
    obs: observation.Observation, sp: spec.JobSpec, action: Action
) -> Action:
    """Count the restarts the driver made itself (``/v1/job``) in ``status.restarts``
    (the Restarts column), with an Event, so they spend the job's one budget."""
    control = obs.control
    if (
        control is None
        or not control.failure_times
        or action.restarts is not None
        or action.kind not in (ActionKind.NOTHING, ActionKind.WAIT)
    ):
        return action
    prev = obs.status.restarts
    # Status keeps milliseconds (truncated): a failure already counted reads back up to
    # 1 ms older than the driver reports it.
    new = sorted(
        t
        for t in control.failure_times
        if prev.last_time is None or t >= prev.last_time + STATUS_TIME_RESOLUTION
    )
    if not new:
        return action
    window = sp.restart_policy.window
    restarts = status.RestartsStatus(
        count=prev.count + len(new),
        last_time=new[-1],
        last_reason=Reason.JOB_RESTARTED.value,
        recent=tuple(t for t in (*prev.recent, *new) if obs.now - t <= window),
    )
    after = f" after: {control.last_failure}" if control.last_failure else ""
    return dataclasses.replace(
        action,
        restarts=restarts,
        reason=Reason.JOB_RESTARTED,
        event=True,
        warning=False,
        message=f"the driver restarted the job from its latest checkpoint{after} "
        f"({len(restarts.recent)} restarts within {format_duration(window)}, at most "
        f"{sp.restart_policy.max_restarts})",
    )


def _restart(obs: observation.Observation, sp: spec.JobSpec, reason: Reason, what: str) -> Action:
    policy = sp.restart_policy
    if policy.type is enums.RestartType.NEVER:
        return Action.fail(reason, f"{what}; restartPolicy is Never")
    store = obs.store
    if store is not None and store.readable:
        refusal = lifecycle.fresh_start_refusal(obs, sp, store)
        if store.newest_usable is None and refusal is not None:
            return refusal
    prev = obs.status.restarts
    recent = [t for t in prev.recent if obs.now - t <= policy.window]
    started = obs.driver.started_at or obs.status.driver.start_time
    if started is not None and obs.now - started >= policy.reset_after:
        recent = []
    if len(recent) >= policy.max_restarts:
        return Action.fail(
            Reason.RESTART_LIMIT_REACHED,
            f"{what}; it was restarted {len(recent)} times within "
            f"{format_duration(policy.window)} (restartPolicy.maxRestarts "
            f"{policy.max_restarts}): giving up. Fix the cause, then set spec.restartNonce",
        )
    delay = backoff_delay(policy, len(recent) + 1, obs.jitter)
    restarts = status.RestartsStatus(
        count=prev.count + 1,
        last_time=obs.now,
        last_reason=reason.value,
        next_attempt_time=obs.now + delay,
        recent=(*recent, obs.now),
    )
    deploy = intent.Intent.deploy(
        lifecycle.intent_id(obs, "r"),
        reason,
        obs.now,
        intent.RestoreTarget.latest(),
        not_before=obs.now + delay,
    )
    return Action.schedule(
        deploy,
        Phase.RESTARTING,
        f"{what}; restarting from the latest checkpoint in "
        f"{format_duration(delay)} (restart {len(recent) + 1} of at most "
        f"{policy.max_restarts} within {format_duration(policy.window)})",
        restarts=restarts,
        warning=True,
    )
