"""Behaviour of individual CRD rules beyond the one-fixture-per-rule invalid set."""

from __future__ import annotations

from typing import Any

import crdcheck
import pytest


@pytest.mark.parametrize(
    ("endpoint", "ok"),
    [
        ("http://minio:9000", True),
        ("https://s3.eu-west-1.amazonaws.com", True),
        ("http://[::1]:8333/", True),
        ("http://127.0.0.1:8333", True),
        ("http://minio:9000/bucket", False),
        ("ftp://minio:9000", False),
        ("minio:9000", False),
    ],
)
def test_storage_endpoint_rule(
    validator: crdcheck.CustomResourceValidator, minimal: dict[str, Any], endpoint: str, ok: bool
) -> None:
    minimal["spec"]["storage"]["endpoint"] = endpoint

    assert validator.validate_create(minimal).ok is ok


EXACT = "the operator manages these keys (use the matching spec fields)"
PREFIX = "the operator manages authentication, images, secrets and volumes"


@pytest.mark.parametrize(
    ("conf", "messages"),
    [
        ({"spark.sql.shuffle.partitions": "8", "spark.executor.memoryOverhead": "1g"}, []),
        (
            {"spark.kubernetes.namespace": "kube-system", "spark.driver.memory": "8g"},
            ["sparkConf must not set spark.kubernetes.namespace, spark.driver.memory: " + EXACT],
        ),
        (
            {"spark.kubernetes.container.image": "evil"},
            [
                "sparkConf must not set keys starting with spark.kubernetes.container.image: "
                + PREFIX
            ],
        ),
        (
            {"spark.authenticate.secret": "x", "spark.kubernetes.driver.secrets.db": "/db"},
            [
                "sparkConf must not set keys starting with spark.authenticate, "
                "spark.kubernetes.driver.secrets.: " + PREFIX
            ],
        ),
        (
            {"spark.kubernetes.executor.volumes.hostPath.root.mount.path": "/host"},
            [
                "sparkConf must not set keys starting with "
                "spark.kubernetes.executor.volumes.hostPath.: " + PREFIX
            ],
        ),
        (
            {"spark.kubernetes.executor.serviceAccountName": "admin"},
            ["sparkConf must not set service accounts: use spec.driver.serviceAccount"],
        ),
    ],
)
def test_spark_conf_deny_list(
    validator: crdcheck.CustomResourceValidator,
    minimal: dict[str, Any],
    conf: dict[str, str],
    messages: list[str],
) -> None:
    minimal["spec"]["sparkConf"] = conf

    found = validator.validate_create(minimal).messages

    assert found == [f"spec.sparkConf: Forbidden: {m}" for m in messages]


@pytest.mark.parametrize(
    ("interval", "min_pause", "ok"),
    [
        ("30s", "0s", True),
        ("100ms", "99ms", True),
        ("1h", "59m", True),
        ("1m", "60s", False),
        ("5m", "1h", False),
    ],
)
def test_min_pause_compares_durations_not_strings(
    validator: crdcheck.CustomResourceValidator,
    minimal: dict[str, Any],
    interval: str,
    min_pause: str,
    ok: bool,
) -> None:
    minimal["spec"]["checkpointing"] = {"interval": interval, "minPause": min_pause}

    assert validator.validate_create(minimal).ok is ok


@pytest.mark.parametrize(
    ("executor", "parallelism", "ok"),
    [
        ({}, 64, True),  # unset instances: the operator sizes the executors
        ({"instances": 4}, 4, True),  # cores defaults to 1
        ({"instances": 4}, 5, False),
        ({"instances": 2, "cores": 4}, 8, True),
    ],
)
def test_executor_task_slots(
    validator: crdcheck.CustomResourceValidator,
    minimal: dict[str, Any],
    executor: dict[str, int],
    parallelism: int,
    ok: bool,
) -> None:
    minimal["spec"]["executor"] = executor
    minimal["spec"]["parallelism"] = parallelism

    assert validator.validate_create(minimal).ok is ok


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            "maxParallelism",
            40000,
            "spec.maxParallelism: Invalid value: 40000: spec.maxParallelism in body should "
            "be less than or equal to 32768",
        ),
        (
            "checkpointing",
            {"interval": "1h30m"},
            'spec.checkpointing.interval: Invalid value: "1h30m": spec.checkpointing.interval '
            "in body should match '^[0-9]{1,6}(ms|s|m|h)$'",
        ),
        (
            "pipeline",
            {"module": "pipelines/wordcount.py"},
            'spec.pipeline.module: Invalid value: "pipelines/wordcount.py": '
            "spec.pipeline.module in body should match "
            "'^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*$'",
        ),
        (
            "storage",
            {
                "endpoint": "http://minio:9000",
                "bucket": "Checkpoints",
                "credentialsSecret": {"name": "minio-credentials"},
            },
            'spec.storage.bucket: Invalid value: "Checkpoints": spec.storage.bucket in body '
            "should match '^[a-z0-9][a-z0-9.-]*[a-z0-9]$'",
        ),
    ],
)
def test_schema_messages(
    validator: crdcheck.CustomResourceValidator,
    minimal: dict[str, Any],
    field: str,
    value: Any,
    message: str,
) -> None:
    minimal["spec"][field] = value

    assert validator.validate_create(minimal).messages == [message]


def test_name_longer_than_forty_characters_is_rejected(
    validator: crdcheck.CustomResourceValidator, minimal: dict[str, Any]
) -> None:
    minimal["metadata"]["name"] = "a" * 41

    assert validator.validate_create(minimal).messages == [
        "metadata.name: Too long: may not be more than 40 bytes",
        "<nil>: Invalid value: null: some validation rules were not checked because the "
        "object was invalid; correct the existing errors to complete validation",
    ]


def test_storage_needs_a_credentials_secret(
    validator: crdcheck.CustomResourceValidator, minimal: dict[str, Any]
) -> None:
    del minimal["spec"]["storage"]["credentialsSecret"]

    assert validator.validate_create(minimal).messages[0] == (
        "spec.storage.credentialsSecret: Required value"
    )


@pytest.mark.parametrize(
    ("env", "ok"),
    [
        (
            [
                {"name": "REGION", "value": "eu"},
                {"name": "API_KEY", "valueFrom": {"secretKeyRef": {"name": "k", "key": "v"}}},
                {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            ],
            True,
        ),
        ([{"name": "HOME", "value": "/root"}], False),  # the operator's own variable
        ([{"name": "AWS_SECRET_ACCESS_KEY", "value": "x"}], False),
        (
            [
                {
                    "name": "BOTH",
                    "value": "a",
                    "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}},
                }
            ],
            False,
        ),
        ([{"name": "NEITHER"}], False),
        (
            [
                {
                    "name": "TWO",
                    "valueFrom": {
                        "secretKeyRef": {"name": "s", "key": "k"},
                        "fieldRef": {"fieldPath": "metadata.name"},
                    },
                }
            ],
            False,
        ),
    ],
)
def test_env_rule(
    validator: crdcheck.CustomResourceValidator,
    minimal: dict[str, Any],
    env: list[dict[str, Any]],
    ok: bool,
) -> None:
    minimal["spec"]["env"] = env

    assert validator.validate_create(minimal).ok is ok


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("state", "Running"),
        ("state", "Suspended"),
        ("upgradeMode", "LastCheckpoint"),
        ("upgradeMode", "Savepoint"),
        ("upgradeMode", "Stateless"),
        # deprecated aliases of v1alpha1, still accepted (the operator normalises them)
        ("state", "running"),
        ("state", "suspended"),
        ("upgradeMode", "last-checkpoint"),
        ("upgradeMode", "savepoint"),
        ("upgradeMode", "stateless"),
    ],
)
def test_enum_values_and_their_deprecated_aliases_are_accepted(
    validator: crdcheck.CustomResourceValidator, minimal: dict[str, Any], field: str, value: str
) -> None:
    minimal["spec"][field] = value

    result = validator.validate_create(minimal)

    assert result.ok, result.message()
    assert result.object["spec"][field] == value


def test_every_spec_enum_is_upper_camel_case_apart_from_documented_aliases(
    schema: dict[str, Any],
) -> None:
    from crdcheck import manifest

    for path, node in manifest.iter_schema(schema):
        values = node.get("enum")
        if not values:
            continue
        canonical = [v for v in values if isinstance(v, str) and v[:1].isupper()]
        aliases = [v for v in values if v not in canonical]
        assert canonical, path
        for alias in aliases:
            assert alias in node["description"], (path, alias)
        if aliases:
            assert "Deprecated aliases" in node["description"], path
        assert node.get("default", canonical[0]) in canonical, path


@pytest.mark.parametrize(
    ("rollback", "checkpointing", "ok"),
    [
        ({"enabled": True, "timeout": "2m"}, {"interval": "30s"}, True),
        ({"enabled": True}, {"interval": "30s"}, True),  # the 5m default
        ({"enabled": True}, {"interval": "10m"}, False),
        ({"enabled": False, "timeout": "10s"}, {"interval": "30s"}, True),  # not used
        ({"enabled": True, "timeout": "500ms"}, {"interval": "1s"}, False),
        ({"timeout": "0s"}, {}, False),
    ],
)
def test_rollback_timeout_rules(
    validator: crdcheck.CustomResourceValidator,
    minimal: dict[str, Any],
    rollback: dict[str, Any],
    checkpointing: dict[str, Any],
    ok: bool,
) -> None:
    minimal["spec"]["rollback"] = rollback
    minimal["spec"]["checkpointing"] = checkpointing

    assert validator.validate_create(minimal).ok is ok


def test_operator_validation_matches_the_rollback_rule(
    validator: crdcheck.CustomResourceValidator, minimal: dict[str, Any]
) -> None:
    from cjob_operator import validate
    from cjob_operator.model import spec

    for timeout in ("10s", "30s", "31s", "5m"):
        minimal["spec"]["rollback"] = {"enabled": True, "timeout": timeout}
        minimal["spec"]["checkpointing"] = {"interval": "30s"}
        crd_ok = validator.validate_create(minimal).ok
        operator_ok = validate.validate(spec.JobSpec.from_storage(minimal["spec"])) == []
        assert crd_ok == operator_ok, timeout
