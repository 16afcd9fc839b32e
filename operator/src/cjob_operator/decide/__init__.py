"""The pure decision: ``decide(observation) -> Action``. No I/O, no kopf, no kubernetes.

This package holds every rule the operator decides by; :func:`decide` is its one entry
point, each module one part of it (:mod:`.lifecycle`, :mod:`.running`, :mod:`.health`,
:mod:`.rollback`, :mod:`.savepoints`). import-linter keeps it free of kopf, the
Kubernetes client, HTTP and the acting layer.

Order of precedence (the first that applies wins):

1. deletion (finalizer): optional final savepoint, delete the driver, release;
2. an invalid spec is rejected (the running driver is left alone);
3. a spec change that did not prove itself within ``spec.rollback.timeout`` is rolled
   back to the last stable spec (:mod:`.rollback`);
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
   (:mod:`.savepoints`); periodic checkpoints are the driver's.
"""

from __future__ import annotations

from cjob_operator import validate
from cjob_operator.decide import health, lifecycle, rollback, running
from cjob_operator.model import enums, observation
from cjob_operator.model.action import Action
from cjob_operator.model.enums import Phase

__all__ = ["backoff_delay", "decide"]

backoff_delay = health.backoff_delay


def decide(obs: observation.Observation) -> Action:
    if obs.deleting:
        return lifecycle.deleting(obs)
    if obs.spec is None:
        return _reject(obs, obs.spec_error or "the spec cannot be read")
    problems = validate.validate(obs.spec)
    if problems:
        return _reject(obs, "; ".join(problems))
    undo = rollback.check(obs, obs.spec)
    if undo is not None:
        return undo
    if obs.status.intent is not None:
        return lifecycle.carry_on(obs, obs.spec, obs.status.intent)
    if obs.spec.state is enums.DesiredState.SUSPENDED:
        return lifecycle.suspend(obs, obs.spec)
    return running.running(obs, obs.spec)


def _reject(obs: observation.Observation, message: str) -> Action:
    never_deployed = obs.status.last_reconciled_spec is None
    return Action.reject(Phase.FAILED if never_deployed else obs.status.phase, message)
