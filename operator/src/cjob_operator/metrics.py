"""Prometheus metrics of the operator (prefix ``cjob_``), labelled by namespace and job.

Counters that mirror driver facts (completed/failed checkpoints) advance when the
operator *observes* a newer checkpoint id, so they count each checkpoint once per
operator process.
"""

from __future__ import annotations

import contextlib

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from cjob_operator.model import status
from cjob_operator.model.enums import Phase

REGISTRY = CollectorRegistry(auto_describe=True)
LABELS = ("namespace", "job")

CHECKPOINTS_TRIGGERED = Counter(
    "cjob_checkpoints_triggered",
    "Checkpoints and savepoints triggered by the operator.",
    (*LABELS, "kind"),
    registry=REGISTRY,
)
CHECKPOINTS_COMPLETED = Counter(
    "cjob_checkpoints_completed", "Completed checkpoints observed.", LABELS, registry=REGISTRY
)
CHECKPOINTS_FAILED = Counter(
    "cjob_checkpoints_failed",
    "Failed checkpoints observed.",
    (*LABELS, "reason"),
    registry=REGISTRY,
)
CHECKPOINT_DURATION = Histogram(
    "cjob_checkpoint_duration_seconds",
    "Duration of completed checkpoints.",
    LABELS,
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
    registry=REGISTRY,
)
LAST_COMPLETED = Gauge(
    "cjob_last_completed_checkpoint_timestamp_seconds",
    "Completion time of the newest completed checkpoint.",
    LABELS,
    registry=REGISTRY,
)
RESTARTS = Counter(
    "cjob_job_restarts", "Driver restarts initiated by the operator.", LABELS, registry=REGISTRY
)
JOBS = Gauge(
    "cjob_jobs", "Jobs by phase (1 for the current phase).", (*LABELS, "phase"), registry=REGISTRY
)
CHECKPOINT_INTERVAL = Gauge(
    "cjob_checkpoint_interval_seconds",
    "The job's checkpoint interval (spec.checkpointing.interval); CheckpointStale scales with it.",
    LABELS,
    registry=REGISTRY,
)
RECONCILE_ERRORS = Counter(
    "cjob_reconcile_errors", "Reconcile loops that ended in an error.", LABELS, registry=REGISTRY
)


def record_status(
    namespace: str,
    job: str,
    old: status.JobStatus,
    new: status.JobStatus,
    *,
    interval: float | None = None,
) -> None:
    """Advance the metrics that follow from a status change (``interval``: the spec's)."""
    if interval is not None:
        CHECKPOINT_INTERVAL.labels(namespace, job).set(interval)
    completed = new.checkpoints.last_completed
    before = old.checkpoints.last_completed
    if completed is not None and (before is None or completed.id > before.id):
        CHECKPOINTS_COMPLETED.labels(namespace, job).inc()
        if completed.duration_seconds is not None:
            CHECKPOINT_DURATION.labels(namespace, job).observe(completed.duration_seconds)
    if completed is not None and completed.time is not None:
        LAST_COMPLETED.labels(namespace, job).set(completed.time)
    failed = new.checkpoints.last_failed
    if failed is not None and failed != old.checkpoints.last_failed:
        CHECKPOINTS_FAILED.labels(namespace, job, failed.reason).inc()
    if new.restarts.count > old.restarts.count:
        RESTARTS.labels(namespace, job).inc(new.restarts.count - old.restarts.count)
    set_phase(namespace, job, new.phase)


def set_phase(namespace: str, job: str, phase: Phase | None) -> None:
    for candidate in Phase:
        JOBS.labels(namespace, job, candidate.value).set(1 if candidate is phase else 0)


def forget(namespace: str, job: str) -> None:
    """Drop the gauges of a deleted job."""
    for candidate in Phase:
        with contextlib.suppress(KeyError):
            JOBS.remove(namespace, job, candidate.value)
    with contextlib.suppress(KeyError):
        CHECKPOINT_INTERVAL.remove(namespace, job)
