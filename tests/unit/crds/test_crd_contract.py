"""The CRD and the controller (``cjob_operator``) agree with each other.

A real API server prunes every status field the schema does not declare, silently,
and the operator reads the spec with its own defaults; these tests keep the two
sides of that contract from drifting apart. That the operator's defaults are the
CRD's is tested once, against a real API server, in ``tests/integration/crds``
(``test_a_minimal_job_is_accepted_and_stored_with_the_crd_defaults``).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from cjob_operator import admission
from cjob_operator import validate as operator_validate
from cjob_operator.model import acks, enums, reasons, savepoints
from cjob_operator.model import intent as intents
from cjob_operator.model import spec as spec_model
from cjob_operator.model import status as status_model

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "examples" / "manifests").glob("*.yaml"))
T = 1_763_800_000.0


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_operator_accepts_every_example_the_crd_accepts(
    validator: admission.CustomResourceValidator, path: Path
) -> None:
    stored = validator.validate_create(yaml.safe_load(path.read_text())).object["spec"]

    assert operator_validate.validate(spec_model.JobSpec.from_storage(stored)) == []


ALLOWED_KEYS = [
    "spark.sql.shuffle.partitions",
    "spark.executor.memoryOverhead",
    "spark.network.timeout",
    "spark.kubernetes.executor.label.team",
    "spark.driver.extraJavaOptions",
]


def _denied_keys() -> list[str]:
    return [
        *operator_validate.DENIED_EXACT,
        *(f"{prefix}x" for prefix in operator_validate.DENIED_PREFIXES),
        *(f"spark.kubernetes.x.{part}" for part in operator_validate.DENIED_SUBSTRINGS),
    ]


@pytest.mark.parametrize("key", [*_denied_keys(), *ALLOWED_KEYS])
def test_spark_conf_deny_list_matches_the_operator(
    validator: admission.CustomResourceValidator, minimal: dict[str, Any], key: str
) -> None:
    minimal["spec"]["sparkConf"] = {key: "value"}

    crd_rejects = not validator.validate_create(minimal).ok

    assert crd_rejects == (operator_validate.deny_reason(key) is not None)


def _full_status() -> status_model.JobStatus:
    return status_model.JobStatus(
        phase=enums.Phase.RUNNING,
        conditions=(
            status_model.Condition("Ready", "True", "DriverRunning", "driver is running", T),
            status_model.Condition("CheckpointHealthy", "False", "TooManyFailures", "3 failed", T),
        ),
        observed_generation=4,
        driver=status_model.DriverStatus("wordcount-driver", "wordcount-driver", T),
        checkpoints=status_model.CheckpointsStatus(
            last_completed=status_model.CompletedCheckpoint(
                42,
                "s3://checkpoints/cjob/default/wordcount/checkpoints/chk-0000000042",
                T,
                1.5,
                4096,
                "periodic",
            ),
            last_failed=status_model.FailedCheckpoint(43, "TIMEOUT", T),
            consecutive_failures=3,
            last_savepoint=status_model.SavepointRef(
                40, "s3://checkpoints/cjob/default/wordcount/savepoints/sp-0000000040", T
            ),
        ),
        restarts=status_model.RestartsStatus(2, T, "DriverFailed", T + 10, (T - 60, T)),
        last_reconciled_spec={"parallelism": 2, "state": "Running"},
        intent=intents.Intent.stop("i-1", reasons.Reason.SUSPEND, T, intents.StopPurpose.SUSPEND),
        error="checkpoint 43 timed out",
        savepoints=savepoints.SavepointsStatus(
            (
                savepoints.SavepointRecord(
                    enums.SavepointKind.PERIODIC,
                    enums.SavepointState.COMPLETED,
                    T - 9,
                    40,
                    "s3://checkpoints/cjob/default/wordcount/savepoints/sp-0000000040",
                    T - 8,
                ),
                savepoints.SavepointRecord(
                    enums.SavepointKind.MANUAL, enums.SavepointState.IN_PROGRESS, T, 44
                ),
            ),
            last_periodic_trigger_time=T - 9,
        ),
        nonces=acks.NonceAcks(
            savepoint_trigger=acks.NonceAck(3, enums.NonceOutcome.IN_PROGRESS, T, "", 44),
            restart=acks.NonceAck(1, enums.NonceOutcome.SUCCEEDED, T - 60, "running", None, T),
        ),
        last_stable_spec={"parallelism": 2, "state": "Running"},
        rollout=status_model.RolloutStatus(enums.RolloutState.STABLE, T - 30),
    )


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


@pytest.mark.parametrize(
    "status",
    [
        _full_status(),
        status_model.JobStatus(),
        _full_status().evolve(
            intent=intents.Intent.deploy(
                "i-2",
                reasons.Reason.RESTART_REQUESTED,
                T,
                intents.RestoreTarget.checkpoint(42),
                not_before=T + 5,
            )
        ),
    ],
    ids=["full", "empty", "deploy-intent"],
)
def test_status_written_by_the_operator_fits_the_schema_unpruned(
    validator: admission.CustomResourceValidator,
    minimal: dict[str, Any],
    status: status_model.JobStatus,
) -> None:
    stored = validator.validate_create(minimal).object
    new = copy.deepcopy(stored)
    new["status"] = status.for_storage()

    result = validator.validate_status_update(new, stored)

    assert result.ok, result.message()
    assert result.object.get("status", {}) == _without_nulls(status.for_storage())


@pytest.mark.parametrize("name", operator_validate.OPERATOR_ENV)
def test_the_env_the_operator_sets_is_refused_by_the_crd_and_the_operator(
    validator: admission.CustomResourceValidator, minimal: dict[str, Any], name: str
) -> None:
    minimal["spec"]["env"] = [{"name": name, "value": "x"}]

    assert not validator.validate_create(minimal).ok
    assert operator_validate.problems_in_env(minimal["spec"]["env"])


def test_the_refused_env_names_are_exactly_what_the_driver_pod_gets_from_the_operator(
    minimal: dict[str, Any],
) -> None:
    from cjob_operator import manifests

    minimal["spec"]["storage"]["credentialsSecret"] = {"name": "s3"}
    sp = spec_model.JobSpec.from_storage(minimal["spec"])
    pod = manifests.driver_pod(manifests.JobRef("ns", "job", "uid"), sp, "d-1", None)
    set_by_operator = {e["name"] for e in pod["spec"]["containers"][0]["env"]}
    assert set_by_operator == set(operator_validate.OPERATOR_ENV)
