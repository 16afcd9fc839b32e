"""Every spec field of the CRD has a consumer (issue 10): the driver (a job.json key), the
pods the operator builds (a manifest field), the operator's decisions, or a clear refusal.

Adding a field to the CRD without saying here who reads it fails
:func:`test_every_spec_leaf_has_a_consumer`; a claimed job.json key that the operator
no longer writes fails :func:`test_claimed_job_json_keys_are_written`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from cjob_operator import manifests
from cjob_operator.model import spec as spec_model

CRD = Path(__file__).parents[3] / "crds" / "checkpointedjobs.checkpointed.dev.yaml"

JOB_JSON = "job.json"
MANIFEST = "manifest"
DECIDE = "decide"

CONSUMERS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "image": (
        (MANIFEST, "driver container image"),
        (JOB_JSON, "sparkConf.spark.kubernetes.container.image"),
    ),
    "imagePullPolicy": ((JOB_JSON, "sparkConf.spark.kubernetes.container.image.pullPolicy"),),
    "pipeline.module": ((JOB_JSON, "pipeline.module"),),
    "pipeline.file": ((JOB_JSON, "pipeline.file"),),
    "pipeline.args": ((JOB_JSON, "pipeline.args"),),
    "parallelism": ((JOB_JSON, "parallelism"),),
    "maxParallelism": ((JOB_JSON, "maxParallelism"),),
    "driver.cores": ((JOB_JSON, "sparkConf.spark.driver.cores"), (MANIFEST, "cpu request")),
    "driver.memory": (
        (JOB_JSON, "sparkConf.spark.driver.memory"),
        (MANIFEST, "memory request and limit"),
    ),
    "driver.serviceAccount": ((MANIFEST, "serviceAccountName"),),
    "driver.podTemplate": ((MANIFEST, "merged driver pod"),),
    "driver.terminationGracePeriodSeconds": (
        (MANIFEST, "terminationGracePeriodSeconds"),
        (JOB_JSON, "driver.terminationGracePeriodSeconds"),
    ),
    "executor.cores": ((JOB_JSON, "sparkConf.spark.executor.cores"),),
    "executor.memory": (
        (JOB_JSON, "sparkConf.spark.executor.memory"),
        (JOB_JSON, "sparkConf.spark.executor.memoryOverhead"),
    ),
    "executor.instances": ((JOB_JSON, "sparkConf.spark.executor.instances"),),
    "executor.podTemplate": ((MANIFEST, "executor pod template in the ConfigMap"),),
    "sparkConf": ((JOB_JSON, "sparkConf"),),
    "env": ((MANIFEST, "driver container env"), (MANIFEST, "executor template env")),
    "checkpointing.interval": ((JOB_JSON, "checkpointing.intervalSeconds"),),
    "checkpointing.timeout": ((JOB_JSON, "checkpointing.timeoutSeconds"),),
    "checkpointing.minPause": ((JOB_JSON, "checkpointing.minPauseSeconds"),),
    "checkpointing.maxConcurrent": ((JOB_JSON, "checkpointing.maxConcurrent"),),
    "checkpointing.tolerableFailures": ((JOB_JSON, "checkpointing.tolerableFailures"),),
    "checkpointing.mode": ((JOB_JSON, "checkpointing.mode"),),
    "checkpointing.unaligned.enabled": ((JOB_JSON, "checkpointing.unaligned"),),
    "checkpointing.unaligned.alignedTimeout": ((JOB_JSON, "checkpointing.alignedTimeoutSeconds"),),
    "checkpointing.retained": ((JOB_JSON, "checkpointing.retained"), (DECIDE, "cleanup")),
    "checkpointing.incremental": ((JOB_JSON, "checkpointing.incremental"),),
    "checkpointing.localRecovery": ((JOB_JSON, "checkpointing.localRecovery"),),
    "checkpointing.stateBackend.type": (
        (JOB_JSON, "checkpointing.stateBackend"),
        (JOB_JSON, "sparkConf.spark.executor.memoryOverhead"),
    ),
    "checkpointing.stateBackend.memory": ((JOB_JSON, "checkpointing.stateMemoryBytes"),),
    "storage.endpoint": ((JOB_JSON, "storage.endpoint"),),
    "storage.bucket": ((JOB_JSON, "storage.bucket"),),
    "storage.prefix": ((JOB_JSON, "storage.root"),),
    "storage.credentialsSecret.name": ((MANIFEST, "secretKeyRef of the storage env"),),
    "storage.credentialsSecret.accessKeyKey": ((MANIFEST, "secretKeyRef of the storage env"),),
    "storage.credentialsSecret.secretKeyKey": ((MANIFEST, "secretKeyRef of the storage env"),),
    "restartPolicy.type": ((DECIDE, "_restart"),),
    "restartPolicy.maxRestarts": ((JOB_JSON, "restartPolicy.maxRestarts"), (DECIDE, "_restart")),
    "restartPolicy.attemptsPerRecord": ((JOB_JSON, "restartPolicy.attemptsPerRecord"),),
    "restartPolicy.window": ((JOB_JSON, "restartPolicy.windowSeconds"), (DECIDE, "_restart")),
    "restartPolicy.backoff.initial": ((JOB_JSON, "restartPolicy.backoff.initialSeconds"),),
    "restartPolicy.backoff.max": ((JOB_JSON, "restartPolicy.backoff.maxSeconds"),),
    "restartPolicy.backoff.multiplier": ((JOB_JSON, "restartPolicy.backoff.multiplier"),),
    "restartPolicy.backoff.jitter": ((JOB_JSON, "restartPolicy.backoff.jitter"),),
    "restartPolicy.resetAfter": (
        (JOB_JSON, "restartPolicy.resetAfterSeconds"),
        (DECIDE, "_restart"),
    ),
    "state": ((DECIDE, "suspend/resume"),),
    "upgradeMode": ((DECIDE, "upgrade"),),
    "restoreFrom.checkpointId": ((DECIDE, "restore target"),),
    "restoreFrom.path": ((DECIDE, "restore target"),),
    "restoreNonce": ((DECIDE, "restore"),),
    "restartNonce": ((DECIDE, "restart"),),
    "checkpointTriggerNonce": ((DECIDE, "manual checkpoint"),),
    "savepointTriggerNonce": ((DECIDE, "manual savepoint"),),
    "allowFreshStart": ((JOB_JSON, "allowFreshStart"), (DECIDE, "fresh_start_refusal")),
    "savepoints.interval": ((DECIDE, "decide.savepoints.periodic_due"),),
    "savepoints.retained": ((DECIDE, "decide.savepoints.beyond_retention"),),
    "rollback.enabled": ((DECIDE, "decide.rollback.check"),),
    "rollback.timeout": ((DECIDE, "decide.rollback.check"),),
}


def spec_schema() -> Mapping[str, Any]:
    crd = yaml.safe_load(CRD.read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1")
    node: Mapping[str, Any] = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return node


def leaves(node: Mapping[str, Any], path: str = "") -> Iterator[str]:
    """Leaf paths; free-form objects (podTemplate, sparkConf) count as one leaf."""
    props = node.get("properties")
    if props and not node.get("x-kubernetes-preserve-unknown-fields"):
        for key, child in props.items():
            yield from leaves(child, f"{path}.{key}" if path else key)
    else:
        yield path


def test_every_spec_leaf_has_a_consumer() -> None:
    found = set(leaves(spec_schema()))
    unread = sorted(found - set(CONSUMERS))
    assert unread == [], f"spec fields nobody reads (wire them or refuse them): {unread}"
    assert sorted(set(CONSUMERS) - found) == [], "consumers listed for fields the CRD lacks"


def test_claimed_job_json_keys_are_written() -> None:
    sp = spec_model.JobSpec.from_storage(
        {
            "image": "i:1",
            "pipeline": {"module": "m", "file": "f"},
            "storage": {
                "endpoint": "http://s3:9000",
                "bucket": "b",
                "credentialsSecret": {"name": "c"},
            },
        }
    )
    doc = manifests.job_config(manifests.JobRef("ns", "job", "uid"), sp)
    for field, consumers in CONSUMERS.items():
        for kind, where in consumers:
            if kind != JOB_JSON:
                continue
            if where.startswith("sparkConf."):
                assert where.removeprefix("sparkConf.") in doc["sparkConf"], (field, where)
                continue
            node: Any = doc
            for part in where.split("."):
                assert isinstance(node, Mapping) and part in node, (field, where)
                node = node[part]
