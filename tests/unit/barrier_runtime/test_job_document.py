"""job.json is one typed definition: what the operator writes, the driver reads back."""

from __future__ import annotations

import json

import pytest

from barrier_runtime import job_document
from cjob_operator import manifests
from cjob_operator.model import spec

JOB = manifests.JobRef("team-a", "orders", "uid-7")

# What the operator wrote before the document was typed (issue 10): still readable.
WRITTEN_BEFORE = {
    "formatVersion": 1,
    "job": {"namespace": "team-a", "name": "orders", "uid": "uid-7"},
    "pipeline": {"module": "jobs.orders", "args": ["--region", "eu"]},
    "parallelism": 4,
    "maxParallelism": 128,
    "checkpointing": {
        "intervalSeconds": 30,
        "timeoutSeconds": 600,
        "minPauseSeconds": 0,
        "maxConcurrent": 1,
        "tolerableFailures": 3,
        "mode": "ExactlyOnce",
        "unaligned": False,
        "alignedTimeoutSeconds": 0,
        "retained": 3,
        "incremental": False,
        "triggeredBy": "driver",
    },
    "storage": {
        "endpoint": "http://minio:9000",
        "bucket": "cjob",
        "prefix": "cjob",
        "root": "cjob/team-a/orders",
        "accessKeyEnv": "AWS_ACCESS_KEY_ID",
        "secretKeyEnv": "AWS_SECRET_ACCESS_KEY",
    },
    "restartPolicy": {
        "maxRestarts": 10,
        "windowSeconds": 3600,
        "backoff": {"initialSeconds": 10, "maxSeconds": 300, "multiplier": 2.0, "jitter": 0.2},
        "resetAfterSeconds": 600,
    },
    "allowFreshStart": False,
    "control": {"port": 8080, "tokenEnv": "CJOB_CONTROL_TOKEN"},
    "driver": {"terminationGracePeriodSeconds": 60},
    "sparkConf": {"spark.master": "k8s://https://kubernetes.default.svc"},
}


def _spec() -> spec.JobSpec:
    return spec.JobSpec.from_storage(
        {
            "image": "registry.local/jobs:3",
            "pipeline": {"module": "jobs.orders", "args": ["--region", "eu"]},
            "parallelism": 4,
            "storage": {"endpoint": "http://minio:9000", "bucket": "cjob"},
            "restartPolicy": {"resetAfter": "30m"},
            "allowFreshStart": True,
            "driver": {"terminationGracePeriodSeconds": 45},
        }
    )


def test_what_the_operator_writes_the_driver_reads_back_unchanged() -> None:
    written = manifests.job_document(JOB, _spec(), "d-1")
    read = job_document.JobDocument.from_storage(json.loads(json.dumps(written.for_storage())))
    assert read == written
    assert (read.restart_policy.reset_after, read.allow_fresh_start, read.grace_period) == (
        1800,
        True,
        45,
    )
    assert manifests.job_config(JOB, _spec(), "d-1") == written.for_storage()


def test_a_document_written_before_the_typed_definition_still_reads() -> None:
    read = job_document.JobDocument.from_storage(WRITTEN_BEFORE)
    assert read.pipeline.args == ("--region", "eu") and read.max_parallelism == 128
    assert read.control == job_document.ControlSection(8080, "CJOB_CONTROL_TOKEN")
    written = read.for_storage()
    added = written["restartPolicy"]  # fields newer than that document take their defaults
    assert (added.pop("attemptsPerRecord"), added.pop("priorFailureTimestamps")) == (3, [])
    assert written["checkpointing"].pop("localRecovery") is False
    assert written["checkpointing"].pop("stateBackend") == "memory"
    assert written["checkpointing"].pop("stateMemoryBytes") == 256 << 20
    assert written == WRITTEN_BEFORE


def test_booleans_and_the_trigger_are_checked_not_coerced() -> None:
    for field, bad in (
        ("unaligned", "false"),
        ("incremental", 1),
        ("localRecovery", "yes"),
        ("triggeredBy", "operatr"),
    ):
        doc = json.loads(json.dumps(WRITTEN_BEFORE))
        doc["checkpointing"][field] = bad
        with pytest.raises(job_document.JobConfigError, match=f"checkpointing.{field}"):
            job_document.JobDocument.from_storage(doc)
