"""The example manifests say what their comments promise (that each is accepted by a real
API server, with the defaults the validator stores, is ``tests/integration/crds``' test)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    assert spec["checkpointing"]["incremental"] is False  # defaulted
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
