"""The checkpoint coordinator: triggers checkpoints, collects acknowledgements, commits.

It lives in the driver and is pure logic: time comes from an injected
:class:`~barrier_runtime.core.clock.Clock`, and it reaches the world only through a
:class:`~barrier_runtime.checkpoint.protocols.TaskGateway` and a
:class:`~barrier_runtime.checkpoint.protocols.MetadataStore`. Every rule
(pacing, min pause, concurrency, timeout, failure counting, retention, barrier
shape) is a small policy object from :mod:`barrier_runtime.checkpoint.policies`.

The life of a checkpoint
------------------------
1. **Request.** :meth:`CheckpointCoordinator.tick` asks for a periodic
   checkpoint, :meth:`~CheckpointCoordinator.trigger_checkpoint` for a manual
   checkpoint or a savepoint. The request decider answers go, wait (periodic:
   try again next tick) or reject (manual: ``TOO_MANY_PENDING``/``MIN_PAUSE``;
   no id is used). Savepoints are forced past both limits.
2. **Trigger.** The next id is taken (ids strictly increase and are never
   reused, not after a failed trigger nor a restart), a pending checkpoint is
   registered and its barrier built. The barrier is delivered through
   ``gateway.trigger``; if delivery fails the checkpoint is aborted with
   ``TASKS_NOT_RUNNING``.
3. **Collect.** :meth:`~CheckpointCoordinator.acknowledge` accepts one
   acknowledgement per expected subtask (``SUCCESS``; else ``DUPLICATE``,
   ``UNKNOWN`` or ``DISCARDED``). :meth:`~CheckpointCoordinator.decline`
   aborts the checkpoint; ``tick`` aborts it with ``TIMEOUT`` once expired.
4. **Commit.** The thread that delivers the last acknowledgement builds the
   metadata and calls ``store.commit``. This is the point of no return: a
   committing checkpoint is no longer expired, declined, subsumed or aborted;
   the commit alone decides. A failed commit aborts it with ``STORAGE_FAILURE``.
5. **Complete.** The completion is recorded (stats, min-pause baseline,
   failure counter reset), older pending *checkpoints* are aborted as
   ``SUBSUMED`` (savepoints are never subsumed), ``gateway.notify_complete``
   lets sinks commit, and for checkpoints ``store.apply_retention`` prunes old
   ones (a retention error is logged; the checkpoint stays complete).
6. **Fail.** An aborted checkpoint leaves the pending table once, so
   ``gateway.notify_aborted`` fires exactly once per id. Counted failures
   (see :mod:`~barrier_runtime.checkpoint.policies.failures`) beyond
   ``tolerable_failures`` call ``on_failover`` once.

Threading
---------
Acknowledgements arrive from many task threads, ticks from the driver, manual
triggers from HTTP handlers. Two locks, always taken in this order:

- the *trigger lock* serialises steps 1 and 2, so barriers leave in id order
  (``gateway.trigger`` runs under it: it may acknowledge in line, but must not
  trigger or reset the coordinator);
- the *state lock* guards the pending table, policies and stats. It is never
  held while calling the gateway, the store or ``on_failover``: side effects
  are collected under it and run after it is released, so a gateway that
  blocks on a task thread, which is itself waiting to acknowledge, cannot
  deadlock the coordinator.

A condition on the state lock wakes :meth:`~CheckpointCoordinator.wait_for`
and lets :meth:`~CheckpointCoordinator.abort_all_pending` wait until commits in
flight have settled (so a restart never reads the store while a commit may
still land in it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping

from barrier_runtime.checkpoint import commit, outcomes, pending, protocols, registry
from barrier_runtime.checkpoint import effects as effects_module
from barrier_runtime.checkpoint import stats as stats_module
from barrier_runtime.checkpoint.policies import (
    barriers,
    failures,
    requests,
    retention,
    subsumption,
)
from barrier_runtime.checkpoint.policies import timeout as timeout_policy
from barrier_runtime.core import clock as clock_module
from barrier_runtime.core import metadata, types

_log = logging.getLogger(__name__)

AckResult = pending.AckResult


class CheckpointCoordinator:
    """Triggers checkpoints and turns a full set of acknowledgements into a committed one."""

    def __init__(
        self,
        config: types.CheckpointConfig,
        *,
        clock: clock_module.Clock,
        gateway: protocols.TaskGateway,
        store: protocols.MetadataStore,
        tasks: Iterable[metadata.TaskKey],
        fingerprint: metadata.JobFingerprint,
        first_checkpoint_id: int,
        on_failover: Callable[[str], None],
        history_size: int = 20,
        commit_settle_timeout: float = 60.0,
    ) -> None:
        self._clock = clock
        self._gateway = gateway
        self._store = store
        self._fingerprint = fingerprint
        self._on_failover = on_failover
        self._commit_settle_timeout = commit_settle_timeout
        self._tasks = _task_set(tasks)
        self._published: dict[types.StepId, int] = {}
        """What the attempt's restored checkpoint had published, per sink step."""
        self._registry = registry.CheckpointRegistry(first_checkpoint_id)
        self._decider = requests.TriggerRequestDecider(config)
        self._timeout = timeout_policy.TimeoutPolicy(config.timeout)
        self._failures = failures.TolerableFailuresPolicy(config.tolerable_failures)
        self._retention = retention.RetentionPolicy(config.retained)
        self._barriers = barriers.BarrierPolicy(config)
        self._stats = stats_module.StatsTracker(history_size)
        self._trigger_lock = threading.Lock()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._decider.start(clock.now())

    @property
    def next_checkpoint_id(self) -> types.CheckpointId:
        """The id the next triggered checkpoint will get."""
        with self._lock:
            return self._registry.next_id

    # -- Steps 1 and 2: request and trigger --

    def trigger_checkpoint(
        self, kind: types.CheckpointKind = types.CheckpointKind.CHECKPOINT
    ) -> outcomes.TriggerOutcome:
        """Trigger a checkpoint or savepoint now (control API); never waits for a free slot."""
        with self._trigger_lock:
            with self._lock:
                now = self._clock.now()
                decision = self._decider.decide_manual(kind, now, self._registry.in_flight)
                if decision.verdict is not requests.Verdict.GO:
                    reason = decision.reason or types.FailureReason.TOO_MANY_PENDING
                    self._stats.trigger_rejected(kind, reason, decision.message, now)
                    _log.info("%s trigger rejected: %s", kind.value, decision.message)
                    return outcomes.TriggerOutcome.rejected(kind, reason, decision.message)
                checkpoint = self._start_locked(kind, now)
            return self._deliver(checkpoint)

    def tick(self) -> None:
        """Expire timed-out checkpoints, then trigger a periodic checkpoint if one is due."""
        effects = effects_module.Effects()
        with self._lock:
            now = self._clock.now()
            for checkpoint in self._registry.pending_checkpoints():
                if self._timeout.is_expired(checkpoint.trigger_time, now):
                    message = self._timeout.expiry_message(checkpoint.missing_tasks)
                    self._abort_locked(checkpoint, types.FailureReason.TIMEOUT, message, effects)
        self._run(effects)
        with self._trigger_lock:
            with self._lock:
                now = self._clock.now()
                decision = self._decider.decide_periodic(now, self._registry.in_flight)
                if decision.verdict is not requests.Verdict.GO:
                    return
                checkpoint = self._start_locked(types.CheckpointKind.CHECKPOINT, now)
            self._deliver(checkpoint)

    def _start_locked(self, kind: types.CheckpointKind, now: float) -> pending.PendingCheckpoint:
        barrier = self._barriers.barrier_for(self._registry.allocate_id(), now, kind)
        checkpoint = pending.PendingCheckpoint(barrier, self._tasks, self._published)
        self._registry.add(checkpoint)
        self._decider.checkpoint_triggered(kind, now)
        self._stats.checkpoint_triggered(checkpoint)
        _log.info("%s triggered (unaligned=%s)", checkpoint, barrier.unaligned)
        return checkpoint

    def _deliver(self, checkpoint: pending.PendingCheckpoint) -> outcomes.TriggerOutcome:
        """Step 2, outside the state lock (but under the trigger lock)."""
        try:
            self._gateway.trigger(checkpoint.barrier)
        except Exception as exc:
            reason = types.FailureReason.TASKS_NOT_RUNNING
            message = f"could not deliver the barrier of {checkpoint} to the tasks: {exc}"
            effects = effects_module.Effects()
            with self._lock:
                aborted = self._abort_locked(checkpoint, reason, message, effects)
            self._run(effects)
            if aborted:
                return outcomes.TriggerOutcome.failed(
                    checkpoint.checkpoint_id, checkpoint.kind, reason, message
                )
        return outcomes.TriggerOutcome.triggered(checkpoint.checkpoint_id, checkpoint.kind)

    # -- Step 3: collect --

    def acknowledge(self, ack: metadata.TaskAcknowledgement) -> pending.AckResult:
        """Accept a subtask's acknowledgement; the last one commits the checkpoint (step 4)."""
        with self._lock:
            checkpoint = self._registry.get(ack.checkpoint_id)
            if checkpoint is None:
                return self._registry.late_ack_result(ack.checkpoint_id)
            result = checkpoint.acknowledge(ack, self._clock.now())
            if result is not pending.AckResult.SUCCESS or not checkpoint.is_fully_acknowledged:
                return result
            document = checkpoint.start_commit(self._clock.now(), self._fingerprint)
        self._commit(checkpoint, document)
        return pending.AckResult.SUCCESS

    def decline(
        self,
        checkpoint_id: types.CheckpointId,
        task: metadata.TaskKey,
        reason: types.FailureReason = types.FailureReason.DECLINED,
        message: str = "",
    ) -> None:
        """A subtask cannot take part in ``checkpoint_id``: abort it (unless already committing).

        Declines for ids that are not pending, or from subtasks the checkpoint
        does not expect, are ignored.
        """
        effects = effects_module.Effects()
        with self._lock:
            checkpoint = self._registry.get(checkpoint_id)
            if checkpoint is None or task not in checkpoint.expected_tasks:
                _log.debug("ignored decline of checkpoint %d by %s", checkpoint_id, task)
                return
            detail = f"declined by {task}" + (f": {message}" if message else "")
            self._abort_locked(checkpoint, reason, detail, effects)
        self._run(effects)

    # -- Steps 4 and 5: commit and complete --

    def _commit(
        self, checkpoint: pending.PendingCheckpoint, document: metadata.CheckpointMetadata
    ) -> None:
        """Write the metadata (outside the lock), then record completion or failure."""
        result = commit.commit(self._store, document)
        effects = effects_module.Effects()
        if result.path is None:
            with self._lock:
                self._abort_locked(
                    checkpoint,
                    types.FailureReason.STORAGE_FAILURE,
                    result.error or "commit failed",
                    effects,
                    commit_failed=True,
                )
            self._run(effects)
            return
        with self._lock:
            self._complete_locked(checkpoint, document, result.path, effects)
        effects_module.Effects.run_notify_complete(self._gateway, document)
        self._run(effects)
        retained = self._retention.retained_after(checkpoint.kind)
        if retained is not None:
            commit.apply_retention(self._store, retained, checkpoint.checkpoint_id)

    def _complete_locked(
        self,
        checkpoint: pending.PendingCheckpoint,
        document: metadata.CheckpointMetadata,
        path: str,
        effects: effects_module.Effects,
    ) -> None:
        now = self._clock.now()
        self._registry.finish(checkpoint, outcomes.CheckpointOutcome.completed_at(document, path))
        entry = self._stats.checkpoint_completed(checkpoint, now, path)
        self._failures.checkpoint_completed()
        self._decider.checkpoint_completed(now)
        for older in self._registry.pending_checkpoints():
            if subsumption.subsumes(checkpoint.checkpoint_id, older.checkpoint_id, older.kind):
                message = f"subsumed by completed {checkpoint}"
                self._abort_locked(older, types.FailureReason.SUBSUMED, message, effects)
        self._changed.notify_all()
        _log.info("%s completed in %.3fs at %s", checkpoint, entry.duration or 0.0, path)

    # -- Step 6: fail --

    def _abort_locked(
        self,
        checkpoint: pending.PendingCheckpoint,
        reason: types.FailureReason,
        message: str,
        effects: effects_module.Effects,
        *,
        commit_failed: bool = False,
    ) -> bool:
        """Finish ``checkpoint`` as failed, once.

        Returns False (and does nothing) if it already left the pending table,
        or if it is committing and this is not its commit failing.
        """
        if not self._registry.is_pending(checkpoint):
            return False
        if checkpoint.is_committing and not commit_failed:
            return False
        self._registry.finish(
            checkpoint,
            outcomes.CheckpointOutcome.failed_with(
                checkpoint.checkpoint_id, checkpoint.kind, reason, message
            ),
        )
        self._stats.checkpoint_failed(checkpoint, self._clock.now(), reason, message)
        effects.aborted.append((checkpoint.checkpoint_id, reason))
        if self._failures.checkpoint_failed(checkpoint.kind, reason):
            last = f"{checkpoint} {reason.value}: {message}"
            effects.failover = self._failures.failover_message(last)
        self._changed.notify_all()
        log = _log.debug if reason is types.FailureReason.SUBSUMED else _log.warning
        log("%s aborted (%s): %s", checkpoint, reason.value, message)
        return True

    def abort_all_pending(self, reason: types.FailureReason) -> None:
        """Abort every pending checkpoint (e.g. ``TASK_FAILURE``, ``JOB_STOPPING``).

        Checkpoints already committing are left to their commit; this call
        waits (up to ``commit_settle_timeout`` seconds, real time) until they
        settle, so a restart that reads the store afterwards sees their final
        state. Do not call it from the gateway or the store.
        """
        effects = effects_module.Effects()
        with self._lock:
            committing = [c for c in self._registry.pending_checkpoints() if c.is_committing]
            for checkpoint in self._registry.pending_checkpoints():
                self._abort_locked(
                    checkpoint, reason, f"all pending aborted: {reason.value}", effects
                )
        self._run(effects)

        def settled() -> bool:
            return not any(self._registry.is_pending(c) for c in committing)

        with self._changed:
            if not self._changed.wait_for(settled, self._commit_settle_timeout):
                _log.warning(
                    "commits still in flight after %.1fs: %s",
                    self._commit_settle_timeout,
                    [c.checkpoint_id for c in committing if self._registry.is_pending(c)],
                )

    def reset_for_restart(
        self,
        tasks: Iterable[metadata.TaskKey],
        published: Mapping[types.StepId, int] | None = None,
    ) -> None:
        """Prepare for a new attempt of the job: new task set, fresh failure count and schedule,
        and what its restored checkpoint had ``published`` (records per sink step).

        Anything still pending is aborted with ``TASK_FAILURE``. Ids keep increasing.
        """
        new_tasks = _task_set(tasks)
        with self._trigger_lock:
            self.abort_all_pending(types.FailureReason.TASK_FAILURE)
            with self._lock:
                self._tasks = new_tasks
                self._published = dict(published or {})
                self._failures.reset()
                self._decider.start(self._clock.now())

    # -- Queries --

    def wait_for(
        self, checkpoint_id: types.CheckpointId, timeout: float
    ) -> outcomes.CheckpointOutcome:
        """Block (real time) until ``checkpoint_id`` completed or failed, at most ``timeout`` s.

        Returns an outcome with status ``IN_PROGRESS`` if it is still running
        then; raises :class:`~.outcomes.UnknownCheckpointError` for an id this
        coordinator never triggered or no longer remembers.
        """
        with self._changed:
            self._changed.wait_for(lambda: self._registry.get(checkpoint_id) is None, timeout)
            outcome = self._registry.outcome(checkpoint_id)
            if outcome is not None:
                return outcome
            running = self._registry.get(checkpoint_id)
            if running is not None:
                return outcomes.CheckpointOutcome.still_in_progress(checkpoint_id, running.kind)
        raise outcomes.UnknownCheckpointError(
            f"checkpoint {checkpoint_id} was not triggered by this coordinator "
            f"or is too old to remember"
        )

    def stats(self) -> stats_module.CheckpointStats:
        """A frozen snapshot of the checkpoint statistics."""
        with self._lock:
            return self._stats.snapshot(
                consecutive_failures=self._failures.consecutive_failures,
                next_checkpoint_id=self._registry.next_id,
            )

    def _run(self, effects: effects_module.Effects) -> None:
        effects.run(self._gateway, self._on_failover)


def _task_set(tasks: Iterable[metadata.TaskKey]) -> frozenset[metadata.TaskKey]:
    task_set = frozenset(tasks)
    if not task_set:
        raise ValueError("the coordinator needs at least one task to checkpoint")
    return task_set
