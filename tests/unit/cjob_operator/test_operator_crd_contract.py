"""Everything the operator writes to the status exists in the CRD's structural schema
(a real API server silently prunes unknown fields), and the spec fields it reads exist."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from cjob_operator.model import acks, intent, status
from cjob_operator.model.enums import (
    NonceOutcome,
    Phase,
    RolloutState,
    SavepointKind,
    SavepointState,
)
from cjob_operator.model.reasons import Reason
from cjob_operator.model.savepoints import SavepointRecord, SavepointsStatus

CRD = Path(__file__).parents[3] / "crds" / "checkpointedjobs.checkpointed.dev.yaml"
pytestmark = pytest.mark.skipif(not CRD.exists(), reason="the CRD is not written yet")


def schema() -> Mapping[str, Any]:
    crd = yaml.safe_load(CRD.read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1")
    root: Mapping[str, Any] = version["schema"]["openAPIV3Schema"]
    return root


def unknown_paths(value: Any, node: Mapping[str, Any], path: str) -> Iterator[str]:
    if node.get("x-kubernetes-preserve-unknown-fields"):
        return
    if isinstance(value, Mapping):
        props = node.get("properties", {})
        for key, child in value.items():
            if key not in props:
                yield f"{path}.{key}"
            else:
                yield from unknown_paths(child, props[key], f"{path}.{key}")
    elif isinstance(value, list) and "items" in node:
        for item in value:
            yield from unknown_paths(item, node["items"], f"{path}[]")


def full_status() -> dict[str, Any]:
    st = status.JobStatus(
        phase=Phase.RUNNING,
        conditions=(status.Condition("Ready", "True", "Running", "m", 1.0, 3),),
        observed_generation=3,
        driver=status.DriverStatus("p", "s", 1.0),
        checkpoints=status.CheckpointsStatus(
            status.CompletedCheckpoint(1, "s3://x", 1.0, 0.1, 10, "periodic"),
            status.FailedCheckpoint(2, "timeout", 2.0),
            1,
            status.SavepointRef(3, "s3://y", 3.0),
        ),
        restarts=status.RestartsStatus(1, 1.0, "DriverFailed", 2.0, (1.0,)),
        last_reconciled_spec={"image": "x"},
        intent=intent.Intent.deploy("d", Reason.CREATED, 1.0, intent.RestoreTarget.latest(), 2.0),
        error="e",
        job_state="RUNNING",
        savepoints=SavepointsStatus(
            (
                SavepointRecord(
                    SavepointKind.PERIODIC, SavepointState.COMPLETED, 1.0, 3, "s3://y", 2.0
                ),
                SavepointRecord(SavepointKind.MANUAL, SavepointState.FAILED, 4.0, message="busy"),
            ),
            last_periodic_trigger_time=1.0,
        ),
        nonces=acks.NonceAcks(
            acks.NonceAck(5, NonceOutcome.SUCCEEDED, 1.0, "done", 4, 2.0),
            acks.NonceAck(6, NonceOutcome.IN_PROGRESS, 1.0, "", 5),
            acks.NonceAck(7, NonceOutcome.IGNORED, 1.0, "suspended", None, 1.0),
            acks.NonceAck(8, NonceOutcome.FAILED, 1.0, "no", None, 3.0),
        ),
        last_stable_spec={"image": "w"},
        rollout=status.RolloutStatus(RolloutState.ROLLED_BACK, 5.0, "rolled back"),
    )
    return st.for_storage()


def test_every_status_field_the_operator_writes_is_in_the_schema() -> None:
    status_schema = schema()["properties"]["status"]
    assert list(unknown_paths(full_status(), status_schema, "status")) == []


def test_phases_match_the_schema_enum() -> None:
    enum = schema()["properties"]["status"]["properties"]["phase"]["enum"]
    assert sorted(enum) == sorted(p.value for p in Phase)


def test_status_enums_match_the_model() -> None:
    props = schema()["properties"]["status"]["properties"]
    record = props["savepoints"]["properties"]["history"]["items"]["properties"]
    assert record["kind"]["enum"] == [k.value for k in SavepointKind]
    assert record["state"]["enum"] == [s.value for s in SavepointState]
    assert props["rollout"]["properties"]["state"]["enum"] == [s.value for s in RolloutState]
    assert sorted(props["nonces"]["properties"]) == sorted(acks.NONCE_FIELDS)
    for field in acks.NONCE_FIELDS:
        outcome = props["nonces"]["properties"][field]["properties"]["outcome"]
        assert outcome["enum"] == [o.value for o in NonceOutcome]


def test_spec_fields_the_operator_reads_are_in_the_schema() -> None:
    spec = schema()["properties"]["spec"]["properties"]
    for field in (
        "image",
        "imagePullPolicy",
        "pipeline",
        "parallelism",
        "maxParallelism",
        "driver",
        "executor",
        "sparkConf",
        "checkpointing",
        "storage",
        "restartPolicy",
        "state",
        "upgradeMode",
        "restoreFrom",
        "restoreNonce",
        "restartNonce",
        "checkpointTriggerNonce",
        "savepointTriggerNonce",
        "allowFreshStart",
    ):
        assert field in spec, field
    assert set(spec["restartPolicy"]["properties"]["backoff"]["properties"]) == {
        "initial",
        "max",
        "multiplier",
        "jitter",
    }
