"""Pure builders: driver pod, service, config, secret; Spark settings; pod templates."""

from __future__ import annotations

import json
import re
from typing import Any

from barrier_runtime.core import types
from cjob_operator import manifests, quantities, validate
from cjob_operator.model import spec
from cjob_operator.model.action import RestorePoint

JOB = manifests.JobRef("team-a", "orders", "uid-7")


def make_spec(**overrides: Any) -> spec.JobSpec:
    raw: dict[str, Any] = {
        "image": "registry.local/jobs:3",
        "pipeline": {"file": "/app/p.py", "args": ["-x"]},
        "parallelism": 4,
        "executor": {"instances": 2, "cores": 2, "memory": "2Gi"},
        "driver": {"memory": "512Mi", "serviceAccount": "drv"},
        "sparkConf": {"spark.sql.shuffle.partitions": "8"},
        "storage": {
            "endpoint": "http://minio:9000",
            "bucket": "b",
            "credentialsSecret": {"name": "s3", "accessKeyKey": "ak", "secretKeyKey": "sk"},
        },
    }
    raw.update(overrides)
    return spec.JobSpec.from_storage(raw)


def test_spark_conf_is_client_mode_on_kubernetes_with_executors_owned_by_the_driver() -> None:
    conf = manifests.spark_conf(JOB, make_spec())
    assert conf["spark.master"] == "k8s://https://kubernetes.default.svc"
    assert conf["spark.submit.deployMode"] == "client"
    assert conf["spark.kubernetes.namespace"] == "team-a"
    assert conf["spark.kubernetes.driver.pod.name"] == "orders-driver"
    assert conf["spark.kubernetes.container.image"] == "registry.local/jobs:3"
    assert conf["spark.driver.host"] == "orders-driver.team-a.svc"
    assert conf["spark.executor.instances"] == "2"
    assert conf["spark.executor.cores"] == "2"
    assert conf["spark.executor.memory"] == "2048m"
    assert conf["spark.driver.memory"] == "512m"
    assert conf["spark.sql.shuffle.partitions"] == "8"


def test_managed_spark_settings_win_over_user_settings() -> None:
    conf = manifests.spark_conf(JOB, make_spec(sparkConf={"spark.master": "local[*]"}))
    assert conf["spark.master"].startswith("k8s://")


def test_driver_pod_runs_cjob_driver_restoring_and_restricted() -> None:
    restore = RestorePoint(
        "s3://b/x/savepoints/sp-0000000009",
        9,
        "s3://b/x/savepoints/sp-0000000009",
        types.CheckpointKind.SAVEPOINT,
    )
    pod = manifests.driver_pod(JOB, make_spec(), "d-1", restore)
    c = pod["spec"]["containers"][0]
    assert "command" not in c  # the image's tini entrypoint stays PID 1 and forwards SIGTERM
    assert c["args"] == [
        "driver",
        "--config",
        "/etc/cjob/job.json",
        "--restore-from",
        "s3://b/x/savepoints/sp-0000000009",
    ]
    assert pod["metadata"]["annotations"][manifests.ANNOTATION_DEPLOYMENT] == "d-1"
    assert pod["metadata"]["ownerReferences"] == [manifests.owner_reference(JOB)]
    assert pod["spec"]["serviceAccountName"] == "drv"
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    env = {e["name"]: e for e in c["env"]}
    assert env["AWS_ACCESS_KEY_ID"]["valueFrom"]["secretKeyRef"] == {"name": "s3", "key": "ak"}
    assert env["AWS_SECRET_ACCESS_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "s3", "key": "sk"}
    assert c["resources"]["requests"]["memory"] == "1152Mi"  # 512Mi + 384Mi JVM + 256Mi Python


def test_no_restore_argument_for_a_fresh_start() -> None:
    pod = manifests.driver_pod(JOB, make_spec(), "d-1", None)
    assert "--restore-from" not in pod["spec"]["containers"][0]["args"]


def test_job_config_has_no_secret_values_and_the_storage_root() -> None:
    cm = manifests.config_map(JOB, make_spec())
    doc = json.loads(cm["data"]["job.json"])
    assert doc["storage"]["root"] == "cjob/team-a/orders"
    assert doc["storage"]["accessKeyEnv"] == "AWS_ACCESS_KEY_ID"
    assert doc["pipeline"] == {"file": "/app/p.py", "args": ["-x"]}
    assert doc["checkpointing"]["intervalSeconds"] == 30.0
    template = json.loads(cm["data"]["executor-pod-template.yaml"])
    assert template["spec"]["automountServiceAccountToken"] is False


def test_service_is_headless_and_exposes_spark_and_control_ports() -> None:
    svc = manifests.service(JOB)
    assert svc["spec"]["clusterIP"] == "None"
    assert {p["name"]: p["port"] for p in svc["spec"]["ports"]} == {
        "driver-rpc": 7078,
        "blockmanager": 7079,
        "control": 8080,
        "spark-ui": 4040,
    }
    assert svc["spec"]["selector"] == {
        manifests.LABEL_JOB: "orders",
        manifests.LABEL_ROLE: "driver",
    }


def test_pod_template_is_merged_under_the_operators_rules() -> None:
    template = {
        "metadata": {"labels": {"team": "a"}},
        "spec": {
            "nodeSelector": {"pool": "stream"},
            "securityContext": {"runAsUser": 0},
            "containers": [
                {
                    "name": "driver",
                    "env": [{"name": "EXTRA", "value": "1"}],
                    "securityContext": {"privileged": True},
                },
                {"name": "sidecar", "image": "busybox"},
            ],
            "volumes": [{"name": "cache", "emptyDir": {}}],
        },
    }
    pod = manifests.driver_pod(JOB, make_spec(driver={"podTemplate": template}), "d-1", None)
    assert pod["spec"]["nodeSelector"] == {"pool": "stream"}
    assert pod["metadata"]["labels"]["team"] == "a"
    assert pod["metadata"]["labels"][manifests.LABEL_JOB] == "orders"
    assert pod["spec"]["securityContext"] == manifests.POD_SECURITY
    names = [c["name"] for c in pod["spec"]["containers"]]
    assert names == ["driver", "sidecar"]
    driver = pod["spec"]["containers"][0]
    assert driver["securityContext"] == manifests.CONTAINER_SECURITY
    assert {"name": "EXTRA", "value": "1"} in driver["env"]
    assert {v["name"] for v in pod["spec"]["volumes"]} == {"cache", "config", "tmp"}


def test_memory_quantities() -> None:
    assert quantities.spark_memory("1Gi") == "1024m"
    assert quantities.spark_memory("1536Mi") == "1536m"
    assert quantities.pod_memory("8Gi") == "9011Mi"


def test_job_config_carries_reset_after_and_allow_fresh_start() -> None:
    doc = manifests.job_config(
        JOB, make_spec(restartPolicy={"resetAfter": "2m"}, allowFreshStart=True)
    )
    assert doc["restartPolicy"]["resetAfterSeconds"] == 120
    assert doc["allowFreshStart"] is True


def test_executor_pod_names_are_unique_per_driver_pod() -> None:
    """Issue 10 finding 7: a new driver must not collide with terminating executors."""
    sp = make_spec()
    first = manifests.spark_conf(JOB, sp, "r-3-18f")["spark.kubernetes.executor.podNamePrefix"]
    again = manifests.spark_conf(JOB, sp, "r-3-18f")["spark.kubernetes.executor.podNamePrefix"]
    second = manifests.spark_conf(JOB, sp, "r-3-190")["spark.kubernetes.executor.podNamePrefix"]
    assert first == again and first != second and first.startswith("orders-")
    other_job = manifests.JobRef("team-a", "orders", "uid-8")  # same name, recreated job
    assert manifests.executor_pod_name_prefix(other_job, "r-3-18f") != first
    longest = manifests.JobRef("ns", "a" * 39 + "-b", "u")  # 41 chars, above the 40 allowed
    for job in (JOB, longest):
        prefix = manifests.executor_pod_name_prefix(job, "d-1-1")
        assert len(prefix) <= manifests.EXECUTOR_PREFIX_MAX
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", prefix)
        assert len(f"{prefix}-exec-{2**31 - 1}") <= 63  # a DNS-1123 label
    cm = manifests.config_map(JOB, sp, "r-3-18f")
    assert (
        json.loads(cm["data"]["job.json"])["sparkConf"]["spark.kubernetes.executor.podNamePrefix"]
        == first
    )


def test_memory_budget_leaves_room_for_python() -> None:
    """Issue 10 finding 6: pod limit = heap + JVM overhead + Python."""
    sp = make_spec()  # executor 2Gi, driver 512Mi
    conf = manifests.spark_conf(JOB, sp)
    assert conf["spark.executor.memory"] == "2048m"
    assert conf["spark.executor.memoryOverhead"] == "1408m"  # 384 JVM native + 1024 Python
    assert "spark.executor.pyspark.memory" not in conf  # an RLIMIT_AS, see spark_conf
    small = quantities.memory_budget("1Gi", quantities.EXECUTOR_PYTHON)
    assert (small.heap, small.overhead, small.python, small.pod) == (1024, 384, 512, 1920)
    big = quantities.memory_budget("16Gi", quantities.EXECUTOR_PYTHON)
    assert (big.overhead, big.python, big.pod) == (1638, 8192, 16384 + 1638 + 8192)
    disk = make_spec(checkpointing={"stateBackend": {"type": "Disk", "memory": "300Mi"}})
    # the state's budget per slice, and an executor runs one slice per core (2 here)
    assert manifests.spark_conf(JOB, disk)["spark.executor.memoryOverhead"] == "2008m"
    memory = make_spec(checkpointing={"stateBackend": {"type": "Memory", "memory": "300Mi"}})
    assert manifests.spark_conf(JOB, memory)["spark.executor.memoryOverhead"] == "1408m"
    arenas = "spark.executorEnv.MALLOC_ARENA_MAX"  # see StateBackend.executor_env
    assert manifests.spark_conf(JOB, disk)[arenas] == "2"
    assert arenas not in manifests.spark_conf(JOB, memory)
    mine = make_spec(checkpointing={"stateBackend": {"type": "Disk"}}, sparkConf={arenas: "4"})
    assert manifests.spark_conf(JOB, mine)[arenas] == "4"  # the user's sparkConf wins
    driver = manifests.driver_pod(JOB, sp, "d-1", None)["spec"]["containers"][0]
    # 512 heap + 384 JVM native + 256 Python (a quarter of the heap, at least 256)
    assert driver["resources"]["limits"]["memory"] == "1152Mi"
    assert driver["resources"]["requests"]["memory"] == "1152Mi"


def test_the_driver_pods_grace_period_is_the_specs_and_in_job_json() -> None:
    default = manifests.driver_pod(JOB, make_spec(), "r-1", None)
    assert default["spec"]["terminationGracePeriodSeconds"] == 60
    sp = make_spec(driver={"terminationGracePeriodSeconds": 300})
    assert (
        manifests.driver_pod(JOB, sp, "r-1", None)["spec"]["terminationGracePeriodSeconds"] == 300
    )
    assert manifests.job_config(JOB, sp)["driver"] == {"terminationGracePeriodSeconds": 300}


def test_the_driver_runs_as_the_operators_driver_account_unless_the_spec_names_one() -> None:
    """Issue 10 finding 1: with no account, drivers ran as `default` and got 403s."""
    unnamed = make_spec(driver={"memory": "512Mi"})
    pod = manifests.driver_pod(JOB, unnamed, "r-1", None, "cjob-driver")
    assert pod["spec"]["serviceAccountName"] == "cjob-driver"
    assert "serviceAccountName" not in manifests.driver_pod(JOB, unnamed, "r-1", None)["spec"]
    named = manifests.driver_pod(JOB, make_spec(), "r-1", None, "cjob-driver")
    assert named["spec"]["serviceAccountName"] == "drv"


def test_executors_run_without_an_api_token() -> None:
    conf = manifests.spark_conf(JOB, make_spec())
    assert conf["spark.kubernetes.authenticate.executor.serviceAccountName"] == "default"
    assert (
        manifests.executor_pod_template(JOB, make_spec())["spec"]["automountServiceAccountToken"]
        is False
    )


def test_spec_env_reaches_the_driver_and_every_executor_after_the_operators_own() -> None:
    user_env = [
        {"name": "REGION", "value": "eu"},
        {"name": "API_KEY", "valueFrom": {"secretKeyRef": {"name": "k", "key": "v"}}},
    ]
    sp = make_spec(env=user_env)
    driver = manifests.driver_pod(JOB, sp, "d-1", None)["spec"]["containers"][0]["env"]
    executor = manifests.executor_pod_template(JOB, sp)["spec"]["containers"][0]["env"]
    for env in (driver, executor):
        assert env[-2:] == user_env
        names = [e["name"] for e in env]
        assert names.index("AWS_ACCESS_KEY_ID") < names.index("REGION")


def test_spec_env_may_not_override_what_the_operator_sets() -> None:
    problems = validate.validate(make_spec(env=[{"name": "POD_IP", "value": "1.2.3.4"}]))
    assert problems == [
        "spec.env sets POD_IP, which the operator sets itself (the pod's own settings): remove it"
    ]


def test_the_driver_pods_cpu_request_follows_sparks_driver_request_cores() -> None:
    def cpu(conf: dict[str, str]) -> str:
        pod = manifests.driver_pod(JOB, make_spec(sparkConf=conf), "d-1", None)
        return str(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"])

    assert cpu({}) == "1"  # spec.driver.cores
    assert cpu({"spark.kubernetes.driver.request.cores": "500m"}) == "500m"
