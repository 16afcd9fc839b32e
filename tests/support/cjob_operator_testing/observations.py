"""Observations for decide() tests: a running job's spec, status and driver, each adjustable."""

from __future__ import annotations

from typing import Any

from barrier_runtime.core import types
from cjob_operator.model import spec, status
from cjob_operator.model.enums import DriverState, Phase
from cjob_operator.model.observation import (
    CheckpointInfo,
    ControlView,
    DriverView,
    Observation,
    StoreView,
    Unusable,
)

NOW = 1_700_000_000.0


def raw_spec(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "image": "registry.local/jobs:1",
        "pipeline": {"module": "jobs.wordcount"},
        "parallelism": 2,
        "maxParallelism": 128,
        "checkpointing": {"interval": "30s"},
        "storage": {"endpoint": "file:///tmp/store", "bucket": "ckpt"},
        "restartPolicy": {
            "type": "Always",
            "maxRestarts": 3,
            "window": "1h",
            "backoff": {"initial": "10s", "max": "5m", "multiplier": 2, "jitter": 0.0},
        },
        "upgradeMode": "LastCheckpoint",
    }
    base.update(overrides)
    return base


CHK40 = CheckpointInfo(40, path="file:///tmp/store/ckpt/ns/job/checkpoints/chk-0000000040")
CHK42 = CheckpointInfo(42, path="file:///tmp/store/ckpt/ns/job/checkpoints/chk-0000000042")
SP41 = CheckpointInfo(
    41,
    kind=types.CheckpointKind.SAVEPOINT,
    path="file:///tmp/store/ckpt/ns/job/savepoints/sp-0000000041",
)

STORES = {
    "empty": StoreView.empty(),
    "usable": StoreView(readable=True, latest_checkpoint=CHK42, latest_savepoint=SP41),
    "corrupt-only": StoreView(
        readable=True,
        unusable=(
            Unusable(43, types.CheckpointKind.CHECKPOINT, "_metadata does not parse"),
            Unusable(42, types.CheckpointKind.CHECKPOINT, "state object missing"),
        ),
    ),
    "unreadable": StoreView.unreadable("connection refused"),
}

READY = ControlView(
    reachable=True,
    ready=True,
    job_state="RUNNING",
    last_trigger_time=NOW - 5,
    latest_completed=CHK42,
)


def running_status(**changes: Any) -> status.JobStatus:
    st = status.JobStatus(
        phase=Phase.RUNNING, observed_generation=1, last_reconciled_spec=raw_spec()
    )
    return st.evolve(**changes)


def observe(
    spec_raw: dict[str, Any] | None = None,
    st: status.JobStatus | None = None,
    driver: DriverView | None = None,
    control: ControlView | None = READY,
    store: StoreView | None = None,
    now: float = NOW,
    deleting: bool = False,
) -> Observation:
    spec_raw = raw_spec() if spec_raw is None else spec_raw
    return Observation(
        namespace="ns",
        name="job",
        uid="uid-1",
        generation=2,
        deleting=deleting,
        spec=spec.JobSpec.from_storage(spec_raw),
        spec_error=None,
        status=running_status() if st is None else st,
        driver=DriverView(DriverState.RUNNING, "job-driver", "d-1", NOW - 600)
        if driver is None
        else driver,
        control=control,
        store=STORES["usable"] if store is None else store,
        now=now,
    )


def failed_driver(code: int = 137, message: str = "OOMKilled (exit code 137)") -> DriverView:
    """A driver pod that died; by default killed (OOM), which a restart may heal."""
    return DriverView(DriverState.FAILED, "job-driver", "d-1", NOW - 60, message, code)
