"""Every example manifest is accepted, and stored with the defaults the operator relies on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from cjob_operator import admission

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "manifests"
EXAMPLE_FILES = sorted(EXAMPLES.glob("*.yaml"))


def _load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    return loaded


def _stored(validator: admission.CustomResourceValidator, name: str) -> dict[str, Any]:
    result = validator.validate_create(_load(name))
    assert result.ok, result.message()
    spec: dict[str, Any] = result.object["spec"]
    return spec


def test_the_documented_examples_exist() -> None:
    assert [p.name for p in EXAMPLE_FILES] == [
        "minimal.yaml",
        "production.yaml",
        "restore-from-checkpoint.yaml",
        "suspended.yaml",
        "wordcount.yaml",
    ]


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_example_is_accepted_without_warnings(
    validator: admission.CustomResourceValidator, path: Path
) -> None:
    documents = list(yaml.safe_load_all(path.read_text()))
    assert [d["kind"] for d in documents] == ["CheckpointedJob"]

    result = validator.validate_create(documents[0])

    assert result.ok, result.message()
    assert result.warnings == ()


def test_minimal_example_is_stored_with_every_default(
    validator: admission.CustomResourceValidator,
) -> None:
    assert _stored(validator, "minimal.yaml") == {
        "image": "ghcr.io/checkpointed-jobs/cjob-runtime:0.1.0",
        "imagePullPolicy": "IfNotPresent",
        "pipeline": {
            "module": "barrier_runtime.demo",
            "args": [
                "--out",
                "s3://checkpoints/running-count-output?endpoint=http://minio.minio.svc:9000",
                "--events-per-key",
                "0",
                "--rate",
                "100",
            ],
        },
        "parallelism": 2,
        "maxParallelism": 128,
        "driver": {"cores": 1, "memory": "1Gi", "terminationGracePeriodSeconds": 60},
        "executor": {"cores": 1, "memory": "1Gi"},
        "checkpointing": {
            "interval": "30s",
            "timeout": "10m",
            "minPause": "0s",
            "maxConcurrent": 1,
            "tolerableFailures": 3,
            "mode": "ExactlyOnce",
            "unaligned": {"enabled": False, "alignedTimeout": "0s"},
            "retained": 3,
            "incremental": False,
        },
        "storage": {
            "endpoint": "http://minio.minio.svc:9000",
            "bucket": "checkpoints",
            "prefix": "cjob",
            "credentialsSecret": {
                "name": "minio-credentials",
                "accessKeyKey": "AWS_ACCESS_KEY_ID",
                "secretKeyKey": "AWS_SECRET_ACCESS_KEY",
            },
        },
        "restartPolicy": {
            "type": "OnFailure",
            "maxRestarts": 10,
            "attemptsPerRecord": 3,
            "window": "1h",
            "backoff": {"initial": "10s", "max": "5m", "multiplier": 2.0, "jitter": 0.2},
            "resetAfter": "10m",
        },
        "state": "Running",
        "upgradeMode": "LastCheckpoint",
        "allowFreshStart": False,
        "savepoints": {"retained": 5},
        "rollback": {"enabled": False, "timeout": "5m"},
    }


def test_production_example_keeps_its_settings_and_defaults_the_secret_keys(
    validator: admission.CustomResourceValidator,
) -> None:
    spec = _stored(validator, "production.yaml")

    assert spec["storage"]["credentialsSecret"] == {
        "name": "minio-credentials",
        "accessKeyKey": "AWS_ACCESS_KEY_ID",
        "secretKeyKey": "AWS_SECRET_ACCESS_KEY",
    }
    assert spec["storage"]["endpoint"].startswith("https://")
    assert (spec["parallelism"], spec["maxParallelism"]) == (8, 1024)
    assert spec["executor"]["instances"] * spec["executor"]["cores"] >= spec["parallelism"]
    assert spec["checkpointing"]["unaligned"] == {"enabled": True, "alignedTimeout": "30s"}
    assert spec["checkpointing"]["incremental"] is False  # defaulted; true is refused
    assert spec["upgradeMode"] == "Savepoint"
    assert spec["savepoints"] == {"interval": "6h", "retained": 4}
    assert spec["rollback"] == {"enabled": True, "timeout": "10m"}
    assert spec["executor"]["podTemplate"]["spec"]["tolerations"][0]["key"] == "dedicated"
    assert "credentials" not in str(spec["sparkConf"]).lower()


def test_suspended_example_is_suspended_and_runs_a_file(
    validator: admission.CustomResourceValidator,
) -> None:
    spec = _stored(validator, "suspended.yaml")

    assert spec["state"] == "Suspended"
    assert spec["pipeline"] == {"file": "/opt/pipelines/sessions.py", "args": ["--gap", "30m"]}


def test_restore_example_names_one_checkpoint_and_a_nonce(
    validator: admission.CustomResourceValidator,
) -> None:
    spec = _stored(validator, "restore-from-checkpoint.yaml")

    assert spec["restoreFrom"] == {"checkpointId": 42}
    assert spec["restoreNonce"] == 1
    assert spec["allowFreshStart"] is False


def test_restore_example_also_works_with_a_savepoint_path(
    validator: admission.CustomResourceValidator,
) -> None:
    job = _load("restore-from-checkpoint.yaml")
    job["spec"]["restoreFrom"] = {
        "path": "s3://checkpoints/cjob/default/wordcount/savepoints/sp-0000000007"
    }

    assert validator.validate_create(job).ok
