"""The operator's per-job gauges follow the status and the spec, and go away with the job."""

from __future__ import annotations

from cjob_operator import metrics
from cjob_operator.model import status
from cjob_operator.model.enums import Phase


def sample(name: str, **labels: str) -> float | None:
    return metrics.REGISTRY.get_sample_value(name, labels)


def test_the_checkpoint_interval_is_exported_for_the_stale_alert() -> None:
    before = status.JobStatus(phase=Phase.DEPLOYING)
    after = status.JobStatus(phase=Phase.RUNNING)
    metrics.record_status("ns", "m1", before, after, interval=45.0)
    assert sample("cjob_checkpoint_interval_seconds", namespace="ns", job="m1") == 45.0
    assert sample("cjob_jobs", namespace="ns", job="m1", phase="Running") == 1.0

    metrics.forget("ns", "m1")
    assert sample("cjob_checkpoint_interval_seconds", namespace="ns", job="m1") is None
    assert sample("cjob_jobs", namespace="ns", job="m1", phase="Running") is None


def test_no_spec_leaves_the_interval_alone() -> None:
    st = status.JobStatus(phase=Phase.FAILED)
    metrics.record_status("ns", "m2", st, st)
    assert sample("cjob_checkpoint_interval_seconds", namespace="ns", job="m2") is None
