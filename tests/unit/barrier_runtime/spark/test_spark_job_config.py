"""The job.json contract: what the operator writes is what ``cjob driver`` runs."""

from __future__ import annotations

import json

import pytest

from barrier_runtime.core import types
from barrier_runtime.core.types import CheckpointingMode
from barrier_runtime.spark import job_config
from cjob_operator import manifests
from cjob_operator.model import spec as spec_model

JOB = manifests.JobRef("team-a", "orders", "uid-1")


def _raw(**overrides):
    raw = {
        "image": "registry.local/jobs:1",
        "pipeline": {"module": "jobs.orders", "args": ["--region", "eu"]},
        "parallelism": 4,
        "maxParallelism": 128,
        "checkpointing": {"interval": "30s", "timeout": "2m", "mode": "AtLeastOnce", "retained": 5},
        "storage": {
            "endpoint": "http://minio.storage:9000",
            "bucket": "ckpt",
            "prefix": "cjob",
            "credentialsSecret": {"name": "minio-creds"},
        },
        "restartPolicy": {
            "maxRestarts": 3,
            "window": "10m",
            "backoff": {"initial": "5s", "max": "1m", "multiplier": 3, "jitter": 0.1},
        },
    }
    raw.update(overrides)
    return raw


def _doc(**overrides):
    spec = spec_model.JobSpec.from_storage(_raw(**overrides))
    return json.loads(json.dumps(manifests.job_config(JOB, spec)))


ENV = {"CJOB_CONTROL_TOKEN": "s3cret"}


def test_the_operators_job_config_becomes_the_drivers_spec() -> None:
    spec = job_config.to_spec(_doc(), environ=ENV, restore_from="chk-7")
    assert spec.pipeline.module == "jobs.orders" and spec.pipeline.args == ("--region", "eu")
    assert spec.parallelism == 4
    assert spec.store.url == "s3://ckpt?endpoint=http://minio.storage:9000"
    assert spec.store.job_path == "cjob/team-a/orders"
    assert (spec.store.access_key_env, spec.store.secret_key_env) == (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
    )
    cp = spec.checkpoint
    assert cp.mode is CheckpointingMode.AT_LEAST_ONCE and cp.timeout == 120 and cp.retained == 5
    assert cp.interval == 30  # the driver paces periodic checkpoints (issue 10, finding 5)
    assert spec.restart.max_restarts == 3 and spec.restart.window == 600
    assert spec.restart.backoff.initial == 5 and spec.restart.backoff.multiplier == 3
    assert spec.restore_from == "chk-7"
    assert spec.control is not None
    assert (spec.control.port, spec.control.token) == (manifests.CONTROL_PORT, "s3cret")
    assert (spec.control.namespace, spec.control.job_name) == ("team-a", "orders")


def test_on_kubernetes_everything_listens_on_the_pod_and_workers_use_the_service() -> None:
    spec = job_config.to_spec(_doc(), environ=ENV)
    assert spec.master == "k8s://https://kubernetes.default.svc"
    assert spec.control is not None and spec.control.host == "0.0.0.0"
    assert spec.coordinator_bind == "0.0.0.0"
    assert spec.coordinator_host == JOB.driver_host()
    assert spec.spark_conf["spark.kubernetes.namespace"] == "team-a"
    assert "spark.master" not in spec.spark_conf


def test_in_a_pod_everything_binds_the_pod_ip_and_spark_finds_the_api_port() -> None:
    pod_env = {**ENV, "POD_IP": "10.1.2.3", "KUBERNETES_SERVICE_PORT": "6443"}
    spec = job_config.to_spec(_doc(), environ=pod_env)
    assert spec.master == "k8s://https://kubernetes.default.svc:6443"
    assert spec.control is not None and spec.control.host == "10.1.2.3"
    assert spec.coordinator_bind == "10.1.2.3"
    assert spec.spark_conf["spark.driver.bindAddress"] == "10.1.2.3"
    assert spec.coordinator_host == JOB.driver_host()  # executors use the Service name


def test_a_local_master_drops_the_kubernetes_settings() -> None:
    spec = job_config.to_spec(_doc(), environ=ENV, master="local[4]")
    assert spec.master == "local[4]" and spec.coordinator_bind == "127.0.0.1"
    assert not [k for k in spec.spark_conf if k.startswith("spark.kubernetes.")]
    assert "spark.driver.host" not in spec.spark_conf


def test_a_file_endpoint_is_a_local_directory_with_the_bucket_inside() -> None:
    spec = job_config.to_spec(
        _doc(storage={"endpoint": "file:///srv/store", "bucket": "ckpt", "prefix": ""}),
        environ=ENV,
    )
    assert spec.store.url == "/srv/store/ckpt" and spec.store.job_path == "team-a/orders"


def test_a_missing_token_is_one_clear_sentence() -> None:
    with pytest.raises(
        job_config.JobConfigError, match="set the environment variable CJOB_CONTROL"
    ):
        job_config.to_spec(_doc(), environ={})


def test_missing_fields_name_what_is_missing() -> None:
    doc = _doc()
    del doc["parallelism"]
    with pytest.raises(job_config.JobConfigError, match="parallelism"):
        job_config.to_spec(doc, environ=ENV)


def test_unreadable_files_are_reported(tmp_path) -> None:
    bad = tmp_path / "job.json"
    bad.write_text("{not json")
    with pytest.raises(job_config.JobConfigError, match="is not JSON"):
        job_config.read(bad)
    with pytest.raises(job_config.JobConfigError, match="cannot read"):
        job_config.read(tmp_path / "missing.json")


def test_reset_after_and_allow_fresh_start_reach_the_driver() -> None:
    """Issue 10 finding 5: both were dropped on the way to job.json."""
    spec = job_config.to_spec(
        _doc(restartPolicy={"resetAfter": "90s"}, allowFreshStart=True), environ=ENV
    )
    assert spec.restart.reset_after == 90 and spec.restart.policy().reset_after == 90
    assert spec.allow_fresh_start is True
    default = job_config.to_spec(_doc(), environ=ENV)
    assert default.restart.reset_after == 600 and default.allow_fresh_start is False


def test_incremental_checkpoints_reach_the_driver_from_the_crd() -> None:
    """Issue 32: ``spec.checkpointing.incremental`` went to job.json, and nothing read it."""
    checkpointing = {"interval": "1s", "incremental": True, "localRecovery": True}
    spec = job_config.to_spec(_doc(checkpointing=checkpointing), environ=ENV)
    assert spec.checkpoint.incremental is True and spec.checkpoint.local_recovery is True
    default = job_config.to_spec(_doc(), environ=ENV).checkpoint
    assert default.incremental is False and default.local_recovery is False


def test_the_state_backend_reaches_the_driver_from_the_crd() -> None:
    checkpointing = {"stateBackend": {"type": "Disk", "memory": "1Gi"}}
    spec = job_config.to_spec(_doc(checkpointing=checkpointing), environ=ENV)
    assert spec.checkpoint.state_backend == types.StateBackend(types.StateBackendKind.DISK, 1 << 30)
    default = job_config.to_spec(_doc(), environ=ENV).checkpoint.state_backend
    assert default == types.StateBackend(types.StateBackendKind.MEMORY, 256 << 20)


def test_allow_fresh_start_must_be_a_boolean() -> None:
    doc = _doc()
    doc["allowFreshStart"] = "yes"
    with pytest.raises(job_config.JobConfigError, match="allowFreshStart"):
        job_config.to_spec(doc, environ=ENV)


def test_the_driver_pods_grace_period_reaches_the_driver() -> None:
    """Issue 10 point 4: the driver's SIGTERM deadline is the pod's grace period."""
    spec = job_config.to_spec(_doc(driver={"terminationGracePeriodSeconds": 120}), environ=ENV)
    assert spec.stop_grace_period == 120
    assert job_config.to_spec(_doc(), environ=ENV).stop_grace_period == 60
    older = _doc()
    del older["driver"]  # a job.json written before the field existed
    assert job_config.to_spec(older, environ=ENV).stop_grace_period == 60


def test_a_grace_period_must_be_positive() -> None:
    doc = _doc()
    doc["driver"] = {"terminationGracePeriodSeconds": 0}
    with pytest.raises(job_config.JobConfigError, match="terminationGracePeriodSeconds"):
        job_config.to_spec(doc, environ=ENV)
