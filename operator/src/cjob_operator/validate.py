"""Spec validation beyond the CRD schema: one clear sentence per problem.

The CRD's OpenAPI schema and CEL rules reject most mistakes at ``kubectl apply``;
this module re-checks what the operator relies on (a cluster may run an older
CRD) and owns the ``sparkConf`` deny-list: keys that would let a job escape its
namespace, service account, image or authentication, or fight the settings the
operator manages, are rejected with the field to use instead.

>>> deny_reason("spark.kubernetes.authenticate.driver.oauthToken")
'credentials and service accounts are set by the operator'
>>> deny_reason("spark.sql.shuffle.partitions") is None
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from barrier_runtime.core import types
from cjob_operator.model import spec as spec_model

DENIED_EXACT: Mapping[str, str] = {
    "spark.master": "it always runs Spark on Kubernetes",
    "spark.submit.deployMode": "the driver always runs in client mode inside its pod",
    "spark.kubernetes.namespace": "jobs run in the namespace of their CheckpointedJob",
    "spark.kubernetes.driver.pod.name": "executors are owned by the driver pod it creates",
    "spark.kubernetes.driver.master": "it always runs Spark on Kubernetes",
    "spark.driver.host": "executors reach the driver through its headless service",
    "spark.driver.bindAddress": "executors reach the driver through its headless service",
    "spark.driver.port": "executors reach the driver through its headless service",
    "spark.driver.blockManager.port": "executors reach the driver through its headless service",
    "spark.executor.instances": "use spec.executor.instances",
    "spark.executor.cores": "use spec.executor.cores",
    "spark.executor.memory": "use spec.executor.memory",
    "spark.driver.memory": "use spec.driver.memory",
    "spark.driver.cores": "use spec.driver.cores",
    "spark.dynamicAllocation.enabled": "barrier execution needs a fixed set of executors",
    "spark.kubernetes.executor.podTemplateFile": "use spec.executor.podTemplate",
    "spark.kubernetes.driver.podTemplateFile": "use spec.driver.podTemplate",
}

DENIED_PREFIXES: Mapping[str, str] = {
    "spark.kubernetes.authenticate.": "credentials and service accounts are set by the operator",
    "spark.authenticate": "Spark authentication is managed by the operator",
    "spark.kubernetes.container.image": "use spec.image and spec.imagePullPolicy",
    "spark.kubernetes.driver.container.image": "use spec.image",
    "spark.kubernetes.executor.container.image": "use spec.image",
    "spark.kubernetes.driver.secrets.": "mounting secrets into job pods is not allowed",
    "spark.kubernetes.executor.secrets.": "mounting secrets into job pods is not allowed",
    "spark.kubernetes.driver.secretKeyRef.": "give job pods Secret values with spec.env",
    "spark.kubernetes.executor.secretKeyRef.": "give job pods Secret values with spec.env",
    "spark.kubernetes.driver.volumes.hostPath.": "hostPath volumes are not allowed",
    "spark.kubernetes.executor.volumes.hostPath.": "hostPath volumes are not allowed",
}

DENIED_SUBSTRINGS: Mapping[str, str] = {
    "serviceAccountName": "use spec.driver.serviceAccount",
}


def deny_reason(key: str) -> str | None:
    """Why ``key`` may not be set in ``spec.sparkConf`` (``None`` when it may)."""
    if key in DENIED_EXACT:
        return DENIED_EXACT[key]
    for prefix, why in DENIED_PREFIXES.items():
        if key.startswith(prefix):
            return why
    for part, why in DENIED_SUBSTRINGS.items():
        if part in key:
            return why
    return None


def problems_in_spark_conf(conf: Mapping[str, str]) -> list[str]:
    problems = []
    for key in sorted(conf):
        why = deny_reason(key)
        if why is not None:
            problems.append(
                f"sparkConf[{key!r}] is managed by the operator ({why}) and cannot be set"
            )
    return problems


def validate(spec: spec_model.JobSpec) -> list[str]:
    """Every problem of ``spec``, each as one sentence; empty when the spec is usable."""
    problems: list[str] = []
    if not spec.image:
        problems.append("spec.image is required")
    if bool(spec.pipeline.module) == bool(spec.pipeline.file):
        problems.append("spec.pipeline needs exactly one of module or file")
    if spec.parallelism < 1:
        problems.append("spec.parallelism must be at least 1")
    if spec.max_parallelism < spec.parallelism:
        problems.append(
            f"spec.parallelism ({spec.parallelism}) must not exceed "
            f"spec.maxParallelism ({spec.max_parallelism})"
        )
    if spec.executor_instances * spec.executor.cores < spec.parallelism:
        problems.append(
            f"spec.executor.instances x cores ({spec.executor_instances} x "
            f"{spec.executor.cores}) must provide at least spec.parallelism "
            f"({spec.parallelism}) task slots for the barrier stage"
        )
    problems.extend(_checkpointing_problems(spec.checkpointing))
    problems.extend(_savepoints_problems(spec.savepoints))
    problems.extend(_rollback_problems(spec))
    problems.extend(_storage_problems(spec.storage))
    problems.extend(_restore_problems(spec))
    problems.extend(problems_in_spark_conf(spec.spark_conf))
    problems.extend(problems_in_env(spec.env))
    return problems


OPERATOR_ENV = (
    "POD_IP",
    "HOME",
    "SPARK_LOCAL_DIRS",
    "CJOB_CONTROL_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
)
"""What the operator sets in job pods (and the CRD's CEL rule refuses in ``spec.env``)."""


def problems_in_env(env: Sequence[Mapping[str, Any]]) -> list[str]:
    """One sentence per ``spec.env`` entry the operator cannot apply.

    >>> for problem in problems_in_env([{"name": "REGION", "value": "eu"},
    ...                                 {"name": "HOME", "value": "/"}]):
    ...     print(problem)
    spec.env sets HOME, which the operator sets itself (the pod's own settings): remove it
    """
    problems = []
    for entry in env:
        name = str(entry.get("name", ""))
        if name in OPERATOR_ENV:
            problems.append(
                f"spec.env sets {name}, which the operator sets itself "
                "(the pod's own settings): remove it"
            )
        elif ("value" in entry) == ("valueFrom" in entry):
            problems.append(f"spec.env entry {name!r} needs exactly one of value or valueFrom")
    return problems


def _checkpointing_problems(cp: spec_model.CheckpointingSpec) -> list[str]:
    problems = []
    for name, value in (("interval", cp.interval), ("timeout", cp.timeout)):
        if value <= 0:
            problems.append(f"spec.checkpointing.{name} must be positive")
    if cp.min_pause >= cp.interval > 0:
        problems.append("spec.checkpointing.minPause must be shorter than the interval")
    if cp.max_concurrent < 1:
        problems.append("spec.checkpointing.maxConcurrent must be at least 1")
    if cp.retained < 1:
        problems.append("spec.checkpointing.retained must be at least 1")
    if cp.unaligned and cp.mode is types.CheckpointingMode.AT_LEAST_ONCE:
        problems.append("spec.checkpointing.unaligned needs mode ExactlyOnce")
    if cp.local_recovery and not cp.incremental:
        problems.append(
            "spec.checkpointing.localRecovery needs incremental: true (it keeps local copies "
            "of incremental checkpoints' shared state)"
        )
    return problems


def _savepoints_problems(sp: spec_model.SavepointsSpec) -> list[str]:
    problems = []
    if sp.interval is not None and sp.interval <= 0:
        problems.append("spec.savepoints.interval must be positive")
    if not 1 <= sp.retained <= MAX_RETAINED_SAVEPOINTS:
        problems.append(f"spec.savepoints.retained must be between 1 and {MAX_RETAINED_SAVEPOINTS}")
    return problems


MAX_RETAINED_SAVEPOINTS = 100


def _rollback_problems(spec: spec_model.JobSpec) -> list[str]:
    rb = spec.rollback
    if rb.timeout <= 0:
        return ["spec.rollback.timeout must be positive"]
    if rb.enabled and rb.timeout <= spec.checkpointing.interval:
        return [
            "spec.rollback.timeout must be longer than spec.checkpointing.interval: a "
            "new spec proves itself with a completed checkpoint"
        ]
    return []


def _storage_problems(storage: spec_model.StorageSpec) -> list[str]:
    problems = []
    if not storage.endpoint:
        problems.append("spec.storage.endpoint is required")
    if not storage.bucket:
        problems.append("spec.storage.bucket is required")
    if storage.endpoint.startswith(("http://", "https://")) and storage.credentials is None:
        problems.append("spec.storage.credentialsSecret is required for an S3 endpoint")
    return problems


def _restore_problems(spec: spec_model.JobSpec) -> list[str]:
    rf = spec.restore_from
    if rf is None:
        return []
    if (rf.checkpoint_id is None) == (rf.path is None):
        return ["spec.restoreFrom needs exactly one of checkpointId or path"]
    return []
