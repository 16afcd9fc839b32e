"""The pure decision: ``decide(observation) -> Action``. No I/O, no kopf, no kubernetes.

Order of precedence (the first that applies wins):

1. deletion (finalizer): optional final savepoint, delete the driver, release;
2. an invalid spec is rejected (the running driver is left alone);
3. a spec change that did not prove itself within ``spec.rollback.timeout`` is rolled
   back to the last stable spec (:mod:`cjob_operator.decide_rollback`);
4. a recorded intent is carried on or settled (status as a write-ahead log);
5. ``state: Suspended``: final savepoint, then delete the driver;
6. ``Failed``/``Finished`` stay so until a nonce or an upgrade asks otherwise;
7. explicit instructions: ``restoreNonce``, ``restartNonce``, an upgrade;
8. driver health: absent, failed or exited drivers are restarted with backoff from
   the newest usable checkpoint — never from empty state when checkpoints exist —
   unless the driver's exit code says no restart can help
   (:data:`barrier_runtime.exit_codes.FINAL`: the job failed for good, or its input
   is wrong); restarts the driver made itself are counted in ``status.restarts``,
   and the new driver is handed the window's restarts, so both spend one budget;
9. a running driver: on-demand savepoint/checkpoint (nonces), then deleting periodic
   savepoints beyond retention, then a periodic savepoint when one is due
   (:mod:`cjob_operator.decide_savepoints`); periodic checkpoints are the driver's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from barrier_runtime import exit_codes
from cjob_operator import decide_lifecycle as lifecycle
from cjob_operator import decide_rollback, decide_savepoints, validate
from cjob_operator.model import changes, enums, intent, observation, spec, status
from cjob_operator.model.action import Action, ActionKind
from cjob_operator.model.durations import format_duration
from cjob_operator.model.enums import DriverState, Phase, SavepointKind


def decide(obs: observation.Observation) -> Action:
    if obs.deleting:
        return lifecycle.deleting(obs)
    if obs.spec is None:
        return _reject(obs, obs.spec_error or "the spec cannot be read")
    problems = validate.validate(obs.spec)
    if problems:
        return _reject(obs, "; ".join(problems))
    rollback = decide_rollback.check(obs, obs.spec)
    if rollback is not None:
        return rollback
    if obs.status.intent is not None:
        return lifecycle.carry_on(obs, obs.spec, obs.status.intent)
    if obs.spec.state is enums.DesiredState.SUSPENDED:
        return lifecycle.suspend(obs, obs.spec)
    return _running(obs, obs.spec)


def backoff_delay(policy: spec.RestartPolicySpec, attempt: int, jitter_sample: float) -> float:
    """Delay before restart ``attempt`` (1-based): exponential, capped, with jitter.

    >>> p = spec.RestartPolicySpec(backoff=spec.BackoffSpec(10, 60, 2, 0.0))
    >>> [backoff_delay(p, n, 0.5) for n in (1, 2, 3, 4)]
    [10.0, 20.0, 40.0, 60.0]
    """
    b = policy.backoff
    base = min(b.max, b.initial * b.multiplier ** max(0, attempt - 1))
    return max(0.0, base * (1.0 + b.jitter * (2.0 * jitter_sample - 1.0)))


def _reject(obs: observation.Observation, message: str) -> Action:
    never_deployed = obs.status.last_reconciled_spec is None
    return Action.reject(Phase.FAILED if never_deployed else obs.status.phase, message)


def _running(obs: observation.Observation, sp: spec.JobSpec) -> Action:
    st = obs.status
    if st.last_reconciled_spec is None:
        target = _initial_target(sp)
        return Action.schedule(
            intent.Intent.deploy(lifecycle.intent_id(obs, "d"), "Created", obs.now, target),
            Phase.DEPLOYING,
            "deploying the job",
            reconciled_spec=lifecycle.accepted(obs, sp),
        )
    diff = changes.classify(lifecycle.last(obs), sp.for_storage())
    if lifecycle.changed(obs, "restoreNonce", sp.restore_nonce) and sp.restore_from is not None:
        target = _initial_target(sp)
        return Action.schedule(
            intent.Intent.deploy(
                lifecycle.intent_id(obs, "d"), "RestoreRequested", obs.now, target
            ),
            Phase.DEPLOYING,
            f"restoring the job from {_describe(target)} as requested",
            reconciled_spec=lifecycle.accepted(obs, sp),
            restarts=_fresh_budget(st),
            nonce="restoreNonce",
        )
    if lifecycle.changed(obs, "restartNonce", sp.restart_nonce):
        return Action.schedule(
            intent.Intent.deploy(
                lifecycle.intent_id(obs, "d"),
                "RestartRequested",
                obs.now,
                intent.RestoreTarget.latest(),
            ),
            Phase.RESTARTING,
            "restarting the job from the latest checkpoint as requested",
            reconciled_spec=lifecycle.accepted(obs, sp),
            restarts=_fresh_budget(st),
            nonce="restartNonce",
        )
    if diff.kind is enums.ChangeKind.UPGRADE:
        return _upgrade(obs, sp, diff)
    if (
        st.phase is Phase.FAILED
        and sp.allow_fresh_start
        and not lifecycle.last(obs).get("allowFreshStart")
    ):
        return Action.schedule(
            intent.Intent.deploy(
                lifecycle.intent_id(obs, "d"),
                "RestartRequested",
                obs.now,
                intent.RestoreTarget.latest(),
            ),
            Phase.RESTARTING,
            "allowFreshStart was set: deploying again",
            reconciled_spec=lifecycle.accepted(obs, sp),
            restarts=_fresh_budget(st),
        )
    if st.phase in (Phase.FAILED, Phase.FINISHED):
        accepted = lifecycle.accepted(obs, sp) if diff.changed else None
        return Action.nothing(st.phase, reconciled_spec=accepted)
    if st.phase is Phase.SUSPENDED and obs.driver.state is DriverState.ABSENT:
        return _resume(obs, sp)
    return _by_driver_state(obs, sp, diff)


def _initial_target(sp: spec.JobSpec) -> intent.RestoreTarget:
    rf = sp.restore_from
    if rf is not None and rf.path:
        return intent.RestoreTarget.at_path(rf.path, rf.checkpoint_id)
    if rf is not None and rf.checkpoint_id is not None:
        return intent.RestoreTarget.checkpoint(rf.checkpoint_id)
    return intent.RestoreTarget.latest()


def _describe(target: intent.RestoreTarget) -> str:
    if target.path:
        return target.path
    if target.checkpoint_id is not None:
        return f"checkpoint {target.checkpoint_id}"
    return "the latest checkpoint"


def _fresh_budget(st: status.JobStatus) -> status.RestartsStatus:
    return status.RestartsStatus(
        count=st.restarts.count,
        last_time=st.restarts.last_time,
        last_reason=st.restarts.last_reason,
    )


def _resume(obs: observation.Observation, sp: spec.JobSpec) -> Action:
    saved = obs.status.checkpoints.last_savepoint
    newest = obs.store.newest_usable if obs.store and obs.store.readable else None
    if saved is not None and (newest is None or saved.id is None or saved.id >= newest.id):
        target = intent.RestoreTarget.at_path(saved.path, saved.id)
    else:
        target = intent.RestoreTarget.latest()
    return Action.schedule(
        intent.Intent.deploy(lifecycle.intent_id(obs, "d"), "Resumed", obs.now, target),
        Phase.DEPLOYING,
        f"resuming the job from {_describe(target)}",
        reconciled_spec=lifecycle.accepted(obs, sp),
    )


def _upgrade(obs: observation.Observation, sp: spec.JobSpec, diff: changes.SpecDiff) -> Action:
    fields = ", ".join(diff.upgrade_paths[:6])
    mode = sp.upgrade_mode
    running = obs.driver.state is DriverState.RUNNING
    if mode is enums.UpgradeMode.SAVEPOINT and running:
        stop = intent.Intent.stop(
            lifecycle.intent_id(obs, "s"), "Upgrade", obs.now, intent.StopPurpose.UPGRADE
        )
        return lifecycle.stop_not_done(obs, stop, Phase.UPGRADING)
    target = (
        intent.RestoreTarget.none()
        if mode is enums.UpgradeMode.STATELESS
        else intent.RestoreTarget.latest()
    )
    store = obs.store
    if (
        target.mode is intent.RestoreMode.LATEST
        and running
        and store is not None
        and store.readable
        and store.newest_usable is None
    ):
        refusal = lifecycle.fresh_start_refusal(obs, sp, store)
        if refusal is not None:
            return Action(
                ActionKind.REJECT,
                obs.status.phase,
                "UpgradeRefused",
                f"not upgrading the running job: {refusal.message}",
                warning=True,
            )
    how = (
        "from empty state (upgradeMode stateless)"
        if target.mode is intent.RestoreMode.NONE
        else "from the latest checkpoint"
    )
    return Action.schedule(
        intent.Intent.deploy(lifecycle.intent_id(obs, "d"), "Upgrade", obs.now, target),
        Phase.UPGRADING,
        f"spec changed ({fields}): redeploying {how}",
        reconciled_spec=lifecycle.accepted(obs, sp),
    )


def _by_driver_state(
    obs: observation.Observation, sp: spec.JobSpec, diff: changes.SpecDiff
) -> Action:
    d = obs.driver
    if d.state is DriverState.ABSENT:
        return _restart(obs, sp, "DriverDisappeared", "the driver pod disappeared")
    if d.state is DriverState.FAILED:
        detail = f": {d.message}" if d.message else ""
        what = f"the driver pod {d.pod_name} failed{detail}"
        if d.exit_code in exit_codes.FINAL:
            return _failed_for_good(what, d.exit_code)
        return _restart(obs, sp, "DriverFailed", what)
    if d.state is DriverState.SUCCEEDED:
        if sp.restart_policy.type is enums.RestartType.ALWAYS:
            return _restart(obs, sp, "DriverExited", f"the driver pod {d.pod_name} exited")
        return Action.nothing(Phase.FINISHED, "Finished", "the job finished", event=True)
    if d.state is DriverState.TERMINATING:
        return Action.wait(obs.status.phase, "DriverTerminating", "the driver pod is terminating")
    if d.state is DriverState.PENDING or obs.control is None or not obs.control.ready:
        return _counting_driver_restarts(
            obs,
            sp,
            Action.wait(lifecycle.driver_phase(obs), "DriverStarting", "waiting for the driver"),
        )
    accepted = lifecycle.accepted(obs, sp) if diff.changed else None
    return _counting_driver_restarts(obs, sp, _checkpoints(obs, sp, accepted))


def _failed_for_good(what: str, code: int) -> Action:
    """The driver said (by its exit code) that starting it again cannot help."""
    if code == exit_codes.MISTAKE:
        return Action.fail(
            "InvalidJob",
            f"{what}; not restarting: the job's pipeline or "
            "configuration must change first (then set spec.restartNonce)",
        )
    return Action.fail(
        "JobFailed",
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
        last_reason="JobRestarted",
        recent=tuple(t for t in (*prev.recent, *new) if obs.now - t <= window),
    )
    after = f" after: {control.last_failure}" if control.last_failure else ""
    return dataclasses.replace(
        action,
        restarts=restarts,
        reason="JobRestarted",
        event=True,
        warning=False,
        message=f"the driver restarted the job from its latest checkpoint{after} "
        f"({len(restarts.recent)} restarts within {format_duration(window)}, at most "
        f"{sp.restart_policy.max_restarts})",
    )


def _checkpoints(
    obs: observation.Observation, sp: spec.JobSpec, accepted: Mapping[str, Any] | None
) -> Action:
    last = dict(lifecycle.last(obs))
    if lifecycle.changed(obs, "savepointTriggerNonce", sp.savepoint_trigger_nonce):
        last["savepointTriggerNonce"] = sp.raw.get("savepointTriggerNonce")
        return Action.trigger(
            enums.SnapshotKind.SAVEPOINT,
            "SavepointTriggered",
            "savepoint requested (savepointTriggerNonce)",
            reconciled_spec=last,
            nonce="savepointTriggerNonce",
        )
    if lifecycle.changed(obs, "checkpointTriggerNonce", sp.checkpoint_trigger_nonce):
        last["checkpointTriggerNonce"] = sp.raw.get("checkpointTriggerNonce")
        return Action.trigger(
            enums.SnapshotKind.CHECKPOINT,
            "ManualCheckpointTriggered",
            "checkpoint requested (checkpointTriggerNonce)",
            reconciled_spec=last,
            nonce="checkpointTriggerNonce",
        )
    # Periodic checkpoints are the driver's: its coordinator paces them (interval,
    # minPause, maxConcurrent, timeout) from job.json, as Flink's JobManager does, to the
    # millisecond and even while the operator is down. The operator asks for the
    # on-demand ones above and for periodic savepoints (spec.savepoints).
    # Retention before the next periodic savepoint: a discard is done in one action,
    # while with a short interval a periodic savepoint is due at almost every reconcile.
    old = decide_savepoints.beyond_retention(obs, sp)
    if old:
        ids = ", ".join(str(r.id) for r in old)
        return Action.discard_savepoints(
            old,
            f"deleting periodic savepoints {ids}: beyond spec.savepoints.retained "
            f"({sp.savepoints.retained})",
            reconciled_spec=accepted,
        )
    if decide_savepoints.periodic_due(obs, sp):
        every = format_duration(sp.savepoints.interval or 0.0)
        return Action.trigger(
            enums.SnapshotKind.SAVEPOINT,
            "PeriodicSavepointTriggered",
            f"periodic savepoint (every {every})",
            reconciled_spec=accepted,
            savepoint_kind=SavepointKind.PERIODIC,
        )
    return Action.nothing(Phase.RUNNING, reconciled_spec=accepted)


def _restart(obs: observation.Observation, sp: spec.JobSpec, reason: str, what: str) -> Action:
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
            "RestartLimitReached",
            f"{what}; it was restarted {len(recent)} times within "
            f"{format_duration(policy.window)} (restartPolicy.maxRestarts "
            f"{policy.max_restarts}): giving up. Fix the cause, then set spec.restartNonce",
        )
    delay = backoff_delay(policy, len(recent) + 1, obs.jitter)
    restarts = status.RestartsStatus(
        count=prev.count + 1,
        last_time=obs.now,
        last_reason=reason,
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
