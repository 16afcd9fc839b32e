"""The table of CheckpointedJob manifests that each break one rule or constraint of the CRD,
and what kube-apiserver v1.37.2 answers to each (``tests/integration/crds/test_crd_refusals.py``
runs them).

A case names what it breaks as ``"<schema path> <keyword>"`` (``spec.parallelism minimum``;
``spec rule[0]``, the first ``x-kubernetes-validations`` entry of ``spec``;
``spec required image``), the names ``test_crd_refusals.constraints`` enumerates from the
CRD file. Where one value cannot break a constraint alone (a duration longer than
``maxLength`` also breaks its pattern; ``minPause`` ``0s`` is never shorter than an
``interval`` of ``0s``) the server's answer lists every cause.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

NAMESPACE = "crd-server"
DELETE = object()
"""In a case's patch: remove this field from the minimal job."""
SKIPPED = (
    "<nil>: Invalid value: null: some validation rules were not checked because the object "
    "was invalid; correct the existing errors to complete validation"
)
"""The server's extra cause when a blocking error (required, enum, type, too long, too many)
kept it from running the CEL rules."""


def minimal_job(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "checkpointed.dev/v1alpha1",
        "kind": "CheckpointedJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "image": "cjob:1",
            "pipeline": {"module": "demo"},
            "storage": {
                "endpoint": "http://minio:9000",
                "bucket": "checkpoints",
                "credentialsSecret": {"name": "minio"},
            },
        },
    }


@dataclass(frozen=True)
class Case:
    """One manifest that breaks ``targets`` (``"<schema path> <keyword>"``, as
    ``test_crd_refusals.constraints`` names them); ``CAUSES[id]`` are the causes the server
    refuses it with."""

    id: str
    targets: tuple[str, ...]
    patch: Mapping[str, Any]
    status: bool = False
    """Patch the status subresource of an existing job instead of creating one."""
    name: str | None = None


def merged(base: Any, patch: Any) -> Any:
    if not isinstance(patch, Mapping) or not isinstance(base, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if value is DELETE:
            out.pop(key, None)
        else:
            out[key] = merged(out.get(key), value)
    return out


def manifest(case: Case, index: int) -> dict[str, Any]:
    name = case.name or f"case-{index}"
    job: dict[str, Any] = merged(minimal_job(name), {} if case.status else case.patch)
    return job


CASES: list[Case] = []


def _case(
    id: str, targets: str, patch: Mapping[str, Any], status: bool = False, name: str | None = None
) -> None:
    CASES.append(Case(id, tuple(targets.split("|")), patch, status, name))


def _long(n: int) -> str:
    return "a" * n


def _spec(**fields: Any) -> dict[str, Any]:
    return {"spec": fields}


def _status(**fields: Any) -> dict[str, Any]:
    return {"status": fields}


_case("name-not-dns-label", "metadata.name pattern", {}, name="Bad_Name")
_case("name-too-long", "metadata.name maxLength", {}, name="a" * 41)
_case("spec-missing", "<root> required spec", {"spec": DELETE})
for f in ("image", "pipeline", "storage"):
    _case(f"{f}-missing", f"spec required {f}", _spec(**{f: DELETE}))
_case("parallelism-above-max", "spec rule[0]", _spec(parallelism=300))
_case("restore-without-nonce", "spec rule[1]", _spec(restoreFrom={"checkpointId": 1}))
_case(
    "executor-slots-below-parallelism",
    "spec rule[2]",
    _spec(executor={"instances": 1}, parallelism=4),
)
_case(
    "rollback-timeout-not-above-interval",
    "spec rule[3]",
    _spec(rollback={"enabled": True, "timeout": "10s"}, checkpointing={"interval": "30s"}),
)
_case("image-with-space", "spec.image pattern", _spec(image="a b"))
_case("image-empty", "spec.image minLength", _spec(image=""))
_case("image-too-long", "spec.image maxLength", _spec(image=_long(513)))
_case("pull-policy-unknown", "spec.imagePullPolicy enum", _spec(imagePullPolicy="Sometimes"))
_case(
    "pipeline-module-and-file",
    "spec.pipeline rule[0]",
    _spec(pipeline={"module": "m", "file": "f.py"}),
)
_case(
    "pipeline-without-code",
    "spec.pipeline rule[0]",
    _spec(pipeline={"module": DELETE, "args": ["x"]}),
)
_case("module-not-dotted-name", "spec.pipeline.module pattern", _spec(pipeline={"module": "1abc"}))
_case("module-too-long", "spec.pipeline.module maxLength", _spec(pipeline={"module": _long(257)}))
_case("file-empty", "spec.pipeline.file minLength", _spec(pipeline={"module": DELETE, "file": ""}))
_case(
    "file-too-long",
    "spec.pipeline.file maxLength",
    _spec(pipeline={"module": DELETE, "file": _long(1025)}),
)
_case(
    "args-too-many",
    "spec.pipeline.args maxItems",
    _spec(pipeline={"module": "m", "args": ["x"] * 65}),
)
_case(
    "arg-too-long",
    "spec.pipeline.args[*] maxLength",
    _spec(pipeline={"module": "m", "args": [_long(4097)]}),
)
_case(
    "env-too-many",
    "spec.env maxItems",
    _spec(env=[{"name": f"V{i}", "value": "x"} for i in range(129)]),
)
_case(
    "env-sets-operator-variable", "spec.env rule[0]", _spec(env=[{"name": "HOME", "value": "/x"}])
)
_case(
    "env-duplicate-name",
    "spec.env x-kubernetes-list-type",
    _spec(env=[{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]),
)
_case("env-without-name", "spec.env[*] required name", _spec(env=[{"value": "1"}]))
_case("env-without-value", "spec.env[*] rule[0]", _spec(env=[{"name": "A"}]))
_case(
    "env-name-not-identifier", "spec.env[*].name pattern", _spec(env=[{"name": "1A", "value": "1"}])
)
_case("env-name-empty", "spec.env[*].name minLength", _spec(env=[{"name": "", "value": "1"}]))
_case(
    "env-name-too-long",
    "spec.env[*].name maxLength",
    _spec(env=[{"name": _long(257), "value": "1"}]),
)
_case(
    "env-value-too-long",
    "spec.env[*].value maxLength",
    _spec(env=[{"name": "A", "value": _long(32769)}]),
)
_case(
    "env-value-from-empty",
    "spec.env[*].valueFrom minProperties",
    _spec(env=[{"name": "A", "valueFrom": {}}]),
)
_case(
    "env-value-from-two-sources",
    "spec.env[*].valueFrom maxProperties",
    _spec(
        env=[
            {
                "name": "A",
                "valueFrom": {
                    "secretKeyRef": {"name": "s", "key": "k"},
                    "configMapKeyRef": {"name": "c", "key": "k"},
                },
            }
        ]
    ),
)
for ref in ("secretKeyRef", "configMapKeyRef"):
    short = "secret" if ref == "secretKeyRef" else "configmap"
    _case(
        f"env-{short}-without-name",
        f"spec.env[*].valueFrom.{ref} required name",
        _spec(env=[{"name": "A", "valueFrom": {ref: {"key": "k"}}}]),
    )
    _case(
        f"env-{short}-without-key",
        f"spec.env[*].valueFrom.{ref} required key",
        _spec(env=[{"name": "A", "valueFrom": {ref: {"name": "s"}}}]),
    )
    _case(
        f"env-{short}-name-too-long",
        f"spec.env[*].valueFrom.{ref}.name maxLength",
        _spec(env=[{"name": "A", "valueFrom": {ref: {"name": _long(254), "key": "k"}}}]),
    )
    _case(
        f"env-{short}-key-too-long",
        f"spec.env[*].valueFrom.{ref}.key maxLength",
        _spec(env=[{"name": "A", "valueFrom": {ref: {"name": "s", "key": _long(254)}}}]),
    )
_case(
    "env-field-ref-without-path",
    "spec.env[*].valueFrom.fieldRef required fieldPath",
    _spec(env=[{"name": "A", "valueFrom": {"fieldRef": {"apiVersion": "v1"}}}]),
)
_case(
    "env-field-ref-api-version-too-long",
    "spec.env[*].valueFrom.fieldRef.apiVersion maxLength",
    _spec(
        env=[
            {
                "name": "A",
                "valueFrom": {"fieldRef": {"apiVersion": _long(17), "fieldPath": "metadata.name"}},
            }
        ]
    ),
)
_case(
    "env-field-ref-path-too-long",
    "spec.env[*].valueFrom.fieldRef.fieldPath maxLength",
    _spec(env=[{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": _long(257)}}}]),
)
_case("parallelism-zero", "spec.parallelism minimum", _spec(parallelism=0))
_case("max-parallelism-zero", "spec.maxParallelism minimum", _spec(parallelism=1, maxParallelism=0))
_case("max-parallelism-above-32768", "spec.maxParallelism maximum", _spec(maxParallelism=32769))
for part, (lo, hi) in {"driver": (0, 65), "executor": (0, 65)}.items():
    _case(f"{part}-cores-zero", f"spec.{part}.cores minimum", _spec(**{part: {"cores": lo}}))
    _case(f"{part}-cores-above-64", f"spec.{part}.cores maximum", _spec(**{part: {"cores": hi}}))
    _case(
        f"{part}-memory-too-long",
        f"spec.{part}.memory maxLength",
        _spec(**{part: {"memory": "1" * 17}}),
    )
    _case(
        f"{part}-memory-spark-style",
        f"spec.{part}.memory rule[0]",
        _spec(**{part: {"memory": "1g"}}),
    )
_case(
    "driver-service-account-not-dns",
    "spec.driver.serviceAccount pattern",
    _spec(driver={"serviceAccount": "Bad"}),
)
_case(
    "driver-service-account-too-long",
    "spec.driver.serviceAccount maxLength",
    _spec(driver={"serviceAccount": _long(254)}),
)
_case(
    "grace-period-below-10",
    "spec.driver.terminationGracePeriodSeconds minimum",
    _spec(driver={"terminationGracePeriodSeconds": 9}),
)
_case(
    "grace-period-above-3600",
    "spec.driver.terminationGracePeriodSeconds maximum",
    _spec(driver={"terminationGracePeriodSeconds": 3601}),
)
_case(
    "executor-instances-zero", "spec.executor.instances minimum", _spec(executor={"instances": 0})
)
_case(
    "executor-instances-above-4096",
    "spec.executor.instances maximum",
    _spec(executor={"instances": 4097}),
)
_case(
    "spark-conf-too-many",
    "spec.sparkConf maxProperties",
    _spec(sparkConf={f"spark.k{i}": "v" for i in range(257)}),
)
_case(
    "spark-conf-managed-keys",
    "spec.sparkConf rule[0]",
    _spec(sparkConf={"spark.master": "local", "spark.executor.cores": "2"}),
)
_case(
    "spark-conf-security-keys",
    "spec.sparkConf rule[1]",
    _spec(
        sparkConf={
            "spark.authenticate": "true",
            "spark.kubernetes.driver.volumes.hostPath.x.mount.path": "/x",
        }
    ),
)
_case(
    "spark-conf-service-account",
    "spec.sparkConf rule[2]",
    _spec(sparkConf={"spark.kubernetes.executor.serviceAccountName": "x"}),
)
_case(
    "spark-conf-value-too-long",
    "spec.sparkConf[*] maxLength",
    _spec(sparkConf={"spark.x": _long(4097)}),
)
_case(
    "min-pause-not-below-interval",
    "spec.checkpointing rule[0]",
    _spec(checkpointing={"interval": "30s", "minPause": "1m"}),
)
_case(
    "unaligned-at-least-once",
    "spec.checkpointing rule[1]",
    _spec(checkpointing={"mode": "AtLeastOnce", "unaligned": {"enabled": True}}),
)
for f in ("interval", "timeout", "minPause"):
    _case(
        f"{f.lower()}-without-unit",
        f"spec.checkpointing.{f} pattern",
        _spec(checkpointing={f: "30"}),
    )
    _case(
        f"{f.lower()}-too-long",
        f"spec.checkpointing.{f} maxLength",
        _spec(checkpointing={f: "1" * 17}),
    )
for f in ("interval", "timeout"):
    _case(
        f"{f}-zero",
        f"spec.checkpointing.{f} rule[0]",
        _spec(checkpointing={f: "0s", "minPause": "0s"} if f == "interval" else {f: "0s"}),
    )
_case(
    "max-concurrent-zero",
    "spec.checkpointing.maxConcurrent minimum",
    _spec(checkpointing={"maxConcurrent": 0}),
)
_case(
    "max-concurrent-above-16",
    "spec.checkpointing.maxConcurrent maximum",
    _spec(checkpointing={"maxConcurrent": 17}),
)
_case(
    "tolerable-failures-negative",
    "spec.checkpointing.tolerableFailures minimum",
    _spec(checkpointing={"tolerableFailures": -1}),
)
_case("mode-unknown", "spec.checkpointing.mode enum", _spec(checkpointing={"mode": "Maybe"}))
_case(
    "aligned-timeout-without-unit",
    "spec.checkpointing.unaligned.alignedTimeout pattern",
    _spec(checkpointing={"unaligned": {"alignedTimeout": "5"}}),
)
_case(
    "aligned-timeout-too-long",
    "spec.checkpointing.unaligned.alignedTimeout maxLength",
    _spec(checkpointing={"unaligned": {"alignedTimeout": "1" * 17}}),
)
_case(
    "state-backend-unknown",
    "spec.checkpointing.stateBackend.type enum",
    _spec(checkpointing={"stateBackend": {"type": "Rocks"}}),
)
_case(
    "state-memory-too-long",
    "spec.checkpointing.stateBackend.memory maxLength",
    _spec(checkpointing={"stateBackend": {"memory": "1" * 17}}),
)
_case(
    "state-memory-spark-style",
    "spec.checkpointing.stateBackend.memory rule[0]",
    _spec(checkpointing={"stateBackend": {"memory": "1g"}}),
)
_case(
    "state-memory-below-16mi",
    "spec.checkpointing.stateBackend.memory rule[1]",
    _spec(checkpointing={"stateBackend": {"type": "Disk", "memory": "8Mi"}}),
)
_case(
    "checkpoints-retained-zero",
    "spec.checkpointing.retained minimum",
    _spec(checkpointing={"retained": 0}),
)
_case(
    "checkpoints-retained-above-1000",
    "spec.checkpointing.retained maximum",
    _spec(checkpointing={"retained": 1001}),
)
for f in ("endpoint", "bucket", "credentialsSecret"):
    _case(f"storage-without-{f.lower()}", f"spec.storage required {f}", _spec(storage={f: DELETE}))
_case(
    "endpoint-too-long",
    "spec.storage.endpoint maxLength",
    _spec(storage={"endpoint": "http://" + _long(510)}),
)
_case(
    "endpoint-without-scheme",
    "spec.storage.endpoint rule[0]",
    _spec(storage={"endpoint": "minio:9000"}),
)
_case(
    "endpoint-with-path",
    "spec.storage.endpoint rule[0]",
    _spec(storage={"endpoint": "http://minio:9000/bucket"}),
)
_case(
    "endpoint-not-http",
    "spec.storage.endpoint rule[0]",
    _spec(storage={"endpoint": "ftp://minio:9000"}),
)
_case(
    "min-pause-equal-in-another-unit",
    "spec.checkpointing rule[0]",
    _spec(checkpointing={"interval": "1m", "minPause": "60s"}),
)
_case(
    "executor-cores-default-to-one",
    "spec rule[2]",
    _spec(executor={"instances": 4}, parallelism=5),
)
_case(
    "spark-conf-namespace-and-memory",
    "spec.sparkConf rule[0]",
    _spec(sparkConf={"spark.kubernetes.namespace": "kube-system", "spark.driver.memory": "8g"}),
)
_case(
    "spark-conf-container-image",
    "spec.sparkConf rule[1]",
    _spec(sparkConf={"spark.kubernetes.container.image": "evil"}),
)
_case(
    "interval-fraction",
    "spec.checkpointing.interval pattern",
    _spec(checkpointing={"interval": "1.5s"}),
)
_case(
    "interval-two-units",
    "spec.checkpointing.interval pattern",
    _spec(checkpointing={"interval": "1m30s"}),
)
_case("memory-fraction", "spec.executor.memory rule[0]", _spec(executor={"memory": "1.5Gi"}))
_case("nonce-not-a-number", "spec.restartNonce type", _spec(restartNonce="again"))
_case("bucket-upper-case", "spec.storage.bucket pattern", _spec(storage={"bucket": "BAD"}))
_case("bucket-too-short", "spec.storage.bucket minLength", _spec(storage={"bucket": "ab"}))
_case("bucket-too-long", "spec.storage.bucket maxLength", _spec(storage={"bucket": _long(64)}))
_case("prefix-leading-slash", "spec.storage.prefix pattern", _spec(storage={"prefix": "/x"}))
_case("prefix-too-long", "spec.storage.prefix maxLength", _spec(storage={"prefix": _long(513)}))
_case(
    "credentials-without-name",
    "spec.storage.credentialsSecret required name",
    _spec(storage={"credentialsSecret": {"name": DELETE, "accessKeyKey": "a"}}),
)
_case(
    "credentials-name-not-dns",
    "spec.storage.credentialsSecret.name pattern",
    _spec(storage={"credentialsSecret": {"name": "Bad"}}),
)
_case(
    "credentials-name-too-long",
    "spec.storage.credentialsSecret.name maxLength",
    _spec(storage={"credentialsSecret": {"name": _long(254)}}),
)
for f in ("accessKeyKey", "secretKeyKey"):
    _case(
        f"{f.lower()}-with-space",
        f"spec.storage.credentialsSecret.{f} pattern",
        _spec(storage={"credentialsSecret": {f: "a b"}}),
    )
    _case(
        f"{f.lower()}-too-long",
        f"spec.storage.credentialsSecret.{f} maxLength",
        _spec(storage={"credentialsSecret": {f: _long(254)}}),
    )
_case(
    "restart-type-unknown",
    "spec.restartPolicy.type enum",
    _spec(restartPolicy={"type": "Sometimes"}),
)
_case(
    "max-restarts-negative",
    "spec.restartPolicy.maxRestarts minimum",
    _spec(restartPolicy={"maxRestarts": -1}),
)
_case(
    "attempts-per-record-zero",
    "spec.restartPolicy.attemptsPerRecord minimum",
    _spec(restartPolicy={"attemptsPerRecord": 0}),
)
_case(
    "attempts-per-record-above-100",
    "spec.restartPolicy.attemptsPerRecord maximum",
    _spec(restartPolicy={"attemptsPerRecord": 101}),
)
for f in ("window", "resetAfter"):
    _case(
        f"{f.lower()}-without-unit",
        f"spec.restartPolicy.{f} pattern",
        _spec(restartPolicy={f: "1"}),
    )
    _case(
        f"{f.lower()}-too-long",
        f"spec.restartPolicy.{f} maxLength",
        _spec(restartPolicy={f: "1" * 17}),
    )
_case(
    "restart-window-zero",
    "spec.restartPolicy.window rule[0]",
    _spec(restartPolicy={"window": "0s"}),
)
_case(
    "backoff-initial-above-max",
    "spec.restartPolicy.backoff rule[0]",
    _spec(restartPolicy={"backoff": {"initial": "10m", "max": "5m"}}),
)
for f in ("initial", "max"):
    _case(
        f"backoff-{f}-without-unit",
        f"spec.restartPolicy.backoff.{f} pattern",
        _spec(restartPolicy={"backoff": {f: "10"}}),
    )
    _case(
        f"backoff-{f}-too-long",
        f"spec.restartPolicy.backoff.{f} maxLength",
        _spec(restartPolicy={"backoff": {f: "1" * 17}}),
    )
_case(
    "backoff-initial-zero",
    "spec.restartPolicy.backoff.initial rule[0]",
    _spec(restartPolicy={"backoff": {"initial": "0s"}}),
)
_case(
    "multiplier-below-one",
    "spec.restartPolicy.backoff.multiplier minimum",
    _spec(restartPolicy={"backoff": {"multiplier": 0.5}}),
)
_case(
    "multiplier-above-100",
    "spec.restartPolicy.backoff.multiplier maximum",
    _spec(restartPolicy={"backoff": {"multiplier": 101}}),
)
_case(
    "jitter-negative",
    "spec.restartPolicy.backoff.jitter minimum",
    _spec(restartPolicy={"backoff": {"jitter": -0.1}}),
)
_case(
    "jitter-above-one",
    "spec.restartPolicy.backoff.jitter maximum",
    _spec(restartPolicy={"backoff": {"jitter": 1.5}}),
)
_case("state-unknown", "spec.state enum", _spec(state="Paused"))
_case("upgrade-mode-unknown", "spec.upgradeMode enum", _spec(upgradeMode="Blue-Green"))
_case(
    "restore-id-and-path",
    "spec.restoreFrom rule[0]",
    _spec(restoreFrom={"checkpointId": 1, "path": "s3://b/x"}, restoreNonce=1),
)
_case(
    "restore-checkpoint-zero",
    "spec.restoreFrom.checkpointId minimum",
    _spec(restoreFrom={"checkpointId": 0}, restoreNonce=1),
)
_case(
    "restore-path-empty",
    "spec.restoreFrom.path minLength",
    _spec(restoreFrom={"path": ""}, restoreNonce=1),
)
_case(
    "restore-path-too-long",
    "spec.restoreFrom.path maxLength",
    _spec(restoreFrom={"path": _long(1025)}, restoreNonce=1),
)
_case(
    "savepoints-interval-without-unit",
    "spec.savepoints.interval pattern",
    _spec(savepoints={"interval": "6"}),
)
_case(
    "savepoints-interval-too-long",
    "spec.savepoints.interval maxLength",
    _spec(savepoints={"interval": "1" * 17}),
)
_case(
    "savepoints-interval-zero",
    "spec.savepoints.interval rule[0]",
    _spec(savepoints={"interval": "0h"}),
)
_case(
    "savepoints-retained-zero",
    "spec.savepoints.retained minimum",
    _spec(savepoints={"retained": 0}),
)
_case(
    "savepoints-retained-above-100",
    "spec.savepoints.retained maximum",
    _spec(savepoints={"retained": 101}),
)
_case(
    "rollback-timeout-without-unit",
    "spec.rollback.timeout pattern",
    _spec(rollback={"timeout": "5"}),
)
_case(
    "rollback-timeout-too-long",
    "spec.rollback.timeout maxLength",
    _spec(rollback={"timeout": "1" * 17}),
)
_case("rollback-timeout-zero", "spec.rollback.timeout rule[0]", _spec(rollback={"timeout": "0s"}))
# types
_case("parallelism-not-a-number", "spec.parallelism type", _spec(parallelism="two"))
_case("image-not-a-string", "spec.image type", _spec(image=5))
_case("pipeline-not-an-object", "spec.pipeline type", _spec(pipeline="m"))
_case("args-not-a-list", "spec.pipeline.args type", _spec(pipeline={"module": "m", "args": "x"}))
_case(
    "unaligned-enabled-not-a-boolean",
    "spec.checkpointing.unaligned.enabled type",
    _spec(checkpointing={"unaligned": {"enabled": "yes"}}),
)
_case(
    "multiplier-not-a-number",
    "spec.restartPolicy.backoff.multiplier type",
    _spec(restartPolicy={"backoff": {"multiplier": "x"}}),
)
_case("spark-conf-value-not-a-string", "spec.sparkConf[*] type", _spec(sparkConf={"spark.x": 1}))
_case(
    "parallelism-above-int32",
    "spec.parallelism format",
    _spec(parallelism=2**31, maxParallelism=32768),
)
_case("nonce-above-int64", "spec.restartNonce format", _spec(restartNonce=2**63))
# unknown fields
_case("unknown-spec-field", "spec additionalProperties", _spec(paralelism=2))
_case(
    "unknown-nested-field",
    "spec.checkpointing additionalProperties",
    _spec(checkpointing={"intervall": "10s"}),
)
_case(
    "unknown-env-field",
    "spec.env[*] additionalProperties",
    _spec(env=[{"name": "A", "value": "1", "secret": True}]),
)
_case("unknown-root-field", "<root> additionalProperties", {"extra": 1})
# status
TIME = "2026-01-01T00:00:00Z"
_case("phase-unknown", "status.phase enum", _status(phase="Sleeping"), status=True)
_case(
    "conditions-too-many",
    "status.conditions maxItems",
    _status(conditions=[{"type": f"T{i}", "status": "True"} for i in range(17)]),
    status=True,
)
_case(
    "conditions-duplicate-type",
    "status.conditions x-kubernetes-list-type",
    _status(conditions=[{"type": "Ready", "status": "True"}, {"type": "Ready", "status": "False"}]),
    status=True,
)
_case(
    "condition-without-type",
    "status.conditions[*] required type",
    _status(conditions=[{"status": "True"}]),
    status=True,
)
_case(
    "condition-without-status",
    "status.conditions[*] required status",
    _status(conditions=[{"type": "Ready"}]),
    status=True,
)
_case(
    "condition-type-too-long",
    "status.conditions[*].type maxLength",
    _status(conditions=[{"type": _long(317), "status": "True"}]),
    status=True,
)
_case(
    "condition-status-unknown",
    "status.conditions[*].status enum",
    _status(conditions=[{"type": "Ready", "status": "Yes"}]),
    status=True,
)
_case(
    "condition-reason-too-long",
    "status.conditions[*].reason maxLength",
    _status(conditions=[{"type": "Ready", "status": "True", "reason": _long(1025)}]),
    status=True,
)
_case(
    "condition-message-too-long",
    "status.conditions[*].message maxLength",
    _status(conditions=[{"type": "Ready", "status": "True", "message": _long(32769)}]),
    status=True,
)
_case(
    "condition-generation-negative",
    "status.conditions[*].observedGeneration minimum",
    _status(conditions=[{"type": "Ready", "status": "True", "observedGeneration": -1}]),
    status=True,
)
_case(
    "condition-time-not-a-time",
    "status.conditions[*].lastTransitionTime format",
    _status(conditions=[{"type": "Ready", "status": "True", "lastTransitionTime": "yesterday"}]),
    status=True,
)
_case(
    "consecutive-failures-negative",
    "status.checkpoints.consecutiveFailures minimum",
    _status(checkpoints={"consecutiveFailures": -1}),
    status=True,
)
_case(
    "shared-bytes-negative",
    "status.checkpoints.sharedBytes minimum",
    _status(checkpoints={"sharedBytes": -1}),
    status=True,
)
_case(
    "restart-count-negative",
    "status.restarts.count minimum",
    _status(restarts={"count": -1}),
    status=True,
)
SAVEPOINT = {"kind": "Manual", "state": "Completed", "triggerTime": TIME}
_case(
    "history-too-long",
    "status.savepoints.history maxItems",
    _status(savepoints={"history": [SAVEPOINT] * 257}),
    status=True,
)
for f in ("kind", "state", "triggerTime"):
    _case(
        f"savepoint-without-{f.lower()}",
        f"status.savepoints.history[*] required {f}",
        _status(savepoints={"history": [{k: v for k, v in SAVEPOINT.items() if k != f}]}),
        status=True,
    )
_case(
    "savepoint-kind-unknown",
    "status.savepoints.history[*].kind enum",
    _status(savepoints={"history": [{**SAVEPOINT, "kind": "Nightly"}]}),
    status=True,
)
_case(
    "savepoint-state-unknown",
    "status.savepoints.history[*].state enum",
    _status(savepoints={"history": [{**SAVEPOINT, "state": "Lost"}]}),
    status=True,
)
ACK = {"value": 1, "outcome": "Succeeded", "time": TIME}
for n in ("checkpointTriggerNonce", "savepointTriggerNonce", "restartNonce", "restoreNonce"):
    for f in ("value", "outcome", "time"):
        _case(
            f"ack-{n.lower()}-without-{f}",
            f"status.nonces.{n} required {f}",
            _status(nonces={n: {k: v for k, v in ACK.items() if k != f}}),
            status=True,
        )
    _case(
        f"ack-{n.lower()}-outcome-unknown",
        f"status.nonces.{n}.outcome enum",
        _status(nonces={n: {**ACK, "outcome": "Maybe"}}),
        status=True,
    )
_case(
    "rollout-without-state",
    "status.rollout required state",
    _status(rollout={"since": TIME}),
    status=True,
)
_case(
    "rollout-without-since",
    "status.rollout required since",
    _status(rollout={"state": "Stable"}),
    status=True,
)
_case(
    "rollout-state-unknown",
    "status.rollout.state enum",
    _status(rollout={"state": "Fine", "since": TIME}),
    status=True,
)

ACCEPTED: dict[str, Mapping[str, Any]] = {
    "endpoint-https-host": _spec(storage={"endpoint": "https://s3.eu-west-1.amazonaws.com"}),
    "endpoint-ipv6-port-slash": _spec(storage={"endpoint": "http://[::1]:8333/"}),
    "endpoint-ipv4-port": _spec(storage={"endpoint": "http://127.0.0.1:8333"}),
    "spark-conf-free-keys": _spec(
        sparkConf={"spark.sql.shuffle.partitions": "8", "spark.executor.memoryOverhead": "1g"}
    ),
    "min-pause-in-a-smaller-unit": _spec(checkpointing={"interval": "100ms", "minPause": "99ms"}),
    "min-pause-59m-interval-1h": _spec(checkpointing={"interval": "1h", "minPause": "59m"}),
    "executors-sized-by-the-operator": _spec(parallelism=64),
    "executor-slots-equal-parallelism": _spec(executor={"instances": 2, "cores": 4}, parallelism=8),
    "rollback-timeout-above-interval": _spec(
        rollback={"enabled": True, "timeout": "1m"}, checkpointing={"interval": "30s"}
    ),
    "deprecated-aliases": _spec(state="suspended", upgradeMode="last-checkpoint"),
    "upper-bounds": _spec(
        image=_long(512),
        maxParallelism=32768,
        parallelism=32768,
        driver={"cores": 64, "terminationGracePeriodSeconds": 3600},
        executor={"cores": 64, "instances": 4096},
        restartPolicy={"backoff": {"multiplier": 100, "jitter": 1}, "attemptsPerRecord": 100},
        checkpointing={"maxConcurrent": 16, "retained": 1000},
        savepoints={"retained": 100},
    ),
    "lower-bounds": _spec(
        parallelism=1,
        maxParallelism=1,
        driver={"cores": 1, "terminationGracePeriodSeconds": 10},
        restartPolicy={"backoff": {"multiplier": 1, "jitter": 0}, "maxRestarts": 0},
        checkpointing={"tolerableFailures": 0, "retained": 1},
    ),
    "full-lists-and-maps": _spec(
        pipeline={"module": "m", "args": ["x"] * 64},
        env=[{"name": f"V{i}", "value": "x"} for i in range(128)],
        sparkConf={f"spark.k{i}": "v" for i in range(256)},
    ),
    "env-from-every-source": _spec(
        env=[
            {"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
            {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}},
            {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ]
    ),
    "longest-name": {"metadata": {"name": "a" * 40}},
}
"""Manifests at the edges of the rules and constraints, which the server must accept."""


# fmt: off
CAUSES: dict[str, tuple[str, ...]] = {
    'name-not-dns-label': ('metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \'-\' or \'.\', and must start and end with an alphanumeric character (e.g. \'example.com\', regex used for validation is \'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\')', 'metadata.name: Invalid value: "Bad_Name": metadata.name in body should match \'^[a-z]([-a-z0-9]*[a-z0-9])?$\''),
    'name-too-long': ('metadata.name: Too long: may not be more than 40 bytes', SKIPPED),
    'spec-missing': ('spec: Required value', SKIPPED),
    'image-missing': ('spec.image: Required value', SKIPPED),
    'pipeline-missing': ('spec.pipeline: Required value', SKIPPED),
    'storage-missing': ('spec.storage: Required value', SKIPPED),
    'parallelism-above-max': ('spec.parallelism: Invalid value: parallelism must not exceed maxParallelism, the number of key groups the job state is split into',),
    'restore-without-nonce': ('spec.restoreNonce: Required value: restoreFrom needs restoreNonce: set it, and change it for every new restore request, so the operator knows when to restore',),
    'executor-slots-below-parallelism': ('spec.executor.instances: Invalid value: executor.instances × executor.cores must be at least parallelism: Spark gang-schedules one task slot per parallel slice',),  # noqa: RUF001
    'rollback-timeout-not-above-interval': ('spec.rollback.timeout: Invalid value: rollback.timeout (10s) must be longer than checkpointing.interval (30s): a changed spec proves itself with a completed checkpoint',),
    'image-with-space': ('spec.image: Invalid value: "a b": spec.image in body should match \'^\\S+$\'',),
    'image-empty': ('spec.image: Invalid value: "": spec.image in body should be at least 1 chars long',),
    'image-too-long': ('spec.image: Too long: may not be more than 512 bytes', SKIPPED),
    'pull-policy-unknown': ('spec.imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"', SKIPPED),
    'pipeline-module-and-file': ('spec.pipeline: Invalid value: pipeline needs exactly one of module or file',),
    'pipeline-without-code': ('spec.pipeline: Invalid value: pipeline needs exactly one of module or file',),
    'module-not-dotted-name': ('spec.pipeline.module: Invalid value: "1abc": spec.pipeline.module in body should match \'^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*$\'',),
    'module-too-long': ('spec.pipeline.module: Too long: may not be more than 256 bytes', SKIPPED),
    'file-empty': ('spec.pipeline.file: Invalid value: "": spec.pipeline.file in body should be at least 1 chars long',),
    'file-too-long': ('spec.pipeline.file: Too long: may not be more than 1024 bytes', SKIPPED),
    'args-too-many': ('spec.pipeline.args: Too many: 65: must have at most 64 items', SKIPPED),
    'arg-too-long': ('spec.pipeline.args[0]: Too long: may not be more than 4096 bytes', SKIPPED),
    'env-too-many': ('spec.env: Too many: 129: must have at most 128 items', SKIPPED),
    'env-sets-operator-variable': ('spec.env: Invalid value: env must not set POD_IP, HOME, SPARK_LOCAL_DIRS, CJOB_CONTROL_TOKEN, AWS_ACCESS_KEY_ID or AWS_SECRET_ACCESS_KEY: the operator sets them',),
    'env-duplicate-name': ('spec.env[1]: Duplicate value: {"name":"A"}',),
    'env-without-name': ('spec.env[0].name: Required value', SKIPPED),
    'env-without-value': ('spec.env[0]: Invalid value: an env entry needs exactly one of value or valueFrom',),
    'env-name-not-identifier': ('spec.env[0].name: Invalid value: "1A": spec.env[0].name in body should match \'^[-._a-zA-Z][-._a-zA-Z0-9]*$\'',),
    'env-name-empty': ('spec.env[0].name: Invalid value: "": spec.env[0].name in body should be at least 1 chars long',),
    'env-name-too-long': ('spec.env[0].name: Too long: may not be more than 256 bytes', SKIPPED),
    'env-value-too-long': ('spec.env[0].value: Too long: may not be more than 32768 bytes', SKIPPED),
    'env-value-from-empty': ('spec.env[0].valueFrom: Invalid value: 0: spec.env[0].valueFrom in body should have at least 1 properties',),
    'env-value-from-two-sources': ('spec.env[0].valueFrom: Too many: 2: must have at most 1 item', SKIPPED),
    'env-secret-without-name': ('spec.env[0].valueFrom.secretKeyRef.name: Required value', SKIPPED),
    'env-secret-without-key': ('spec.env[0].valueFrom.secretKeyRef.key: Required value', SKIPPED),
    'env-secret-name-too-long': ('spec.env[0].valueFrom.secretKeyRef.name: Too long: may not be more than 253 bytes', SKIPPED),
    'env-secret-key-too-long': ('spec.env[0].valueFrom.secretKeyRef.key: Too long: may not be more than 253 bytes', SKIPPED),
    'env-configmap-without-name': ('spec.env[0].valueFrom.configMapKeyRef.name: Required value', SKIPPED),
    'env-configmap-without-key': ('spec.env[0].valueFrom.configMapKeyRef.key: Required value', SKIPPED),
    'env-configmap-name-too-long': ('spec.env[0].valueFrom.configMapKeyRef.name: Too long: may not be more than 253 bytes', SKIPPED),
    'env-configmap-key-too-long': ('spec.env[0].valueFrom.configMapKeyRef.key: Too long: may not be more than 253 bytes', SKIPPED),
    'env-field-ref-without-path': ('spec.env[0].valueFrom.fieldRef.fieldPath: Required value', SKIPPED),
    'env-field-ref-api-version-too-long': ('spec.env[0].valueFrom.fieldRef.apiVersion: Too long: may not be more than 16 bytes', SKIPPED),
    'env-field-ref-path-too-long': ('spec.env[0].valueFrom.fieldRef.fieldPath: Too long: may not be more than 256 bytes', SKIPPED),
    'parallelism-zero': ('spec.parallelism: Invalid value: 0: spec.parallelism in body should be greater than or equal to 1',),
    'max-parallelism-zero': ('spec.maxParallelism: Invalid value: 0: spec.maxParallelism in body should be greater than or equal to 1', 'spec.parallelism: Invalid value: parallelism must not exceed maxParallelism, the number of key groups the job state is split into'),
    'max-parallelism-above-32768': ('spec.maxParallelism: Invalid value: 32769: spec.maxParallelism in body should be less than or equal to 32768',),
    'driver-cores-zero': ('spec.driver.cores: Invalid value: 0: spec.driver.cores in body should be greater than or equal to 1',),
    'driver-cores-above-64': ('spec.driver.cores: Invalid value: 65: spec.driver.cores in body should be less than or equal to 64',),
    'driver-memory-too-long': ('spec.driver.memory: Too long: may not be more than 16 bytes', SKIPPED),
    'driver-memory-spark-style': ('spec.driver.memory: Invalid value: "1g": memory must be a whole Kubernetes quantity such as 512Mi, 4Gi or 2000M (Spark-style values such as 1g are not accepted)',),
    'executor-cores-zero': ('spec.executor.cores: Invalid value: 0: spec.executor.cores in body should be greater than or equal to 1',),
    'executor-cores-above-64': ('spec.executor.cores: Invalid value: 65: spec.executor.cores in body should be less than or equal to 64',),
    'executor-memory-too-long': ('spec.executor.memory: Too long: may not be more than 16 bytes', SKIPPED),
    'executor-memory-spark-style': ('spec.executor.memory: Invalid value: "1g": memory must be a whole Kubernetes quantity such as 512Mi, 4Gi or 2000M (Spark-style values such as 1g are not accepted)',),
    'driver-service-account-not-dns': ('spec.driver.serviceAccount: Invalid value: "Bad": spec.driver.serviceAccount in body should match \'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$\'',),
    'driver-service-account-too-long': ('spec.driver.serviceAccount: Too long: may not be more than 253 bytes', SKIPPED),
    'grace-period-below-10': ('spec.driver.terminationGracePeriodSeconds: Invalid value: 9: spec.driver.terminationGracePeriodSeconds in body should be greater than or equal to 10',),
    'grace-period-above-3600': ('spec.driver.terminationGracePeriodSeconds: Invalid value: 3601: spec.driver.terminationGracePeriodSeconds in body should be less than or equal to 3600',),
    'executor-instances-zero': ('spec.executor.instances: Invalid value: 0: spec.executor.instances in body should be greater than or equal to 1', 'spec.executor.instances: Invalid value: executor.instances × executor.cores must be at least parallelism: Spark gang-schedules one task slot per parallel slice'),  # noqa: RUF001
    'executor-instances-above-4096': ('spec.executor.instances: Invalid value: 4097: spec.executor.instances in body should be less than or equal to 4096',),
    'spark-conf-too-many': ('spec.sparkConf: Too many: 257: must have at most 256 items', SKIPPED),
    'spark-conf-managed-keys': ('spec.sparkConf: Forbidden: sparkConf must not set spark.master, spark.executor.cores: the operator manages these keys (use the matching spec fields)',),
    'spark-conf-security-keys': ('spec.sparkConf: Forbidden: sparkConf must not set keys starting with spark.authenticate, spark.kubernetes.driver.volumes.hostPath.: the operator manages authentication, images, secrets and volumes',),
    'spark-conf-service-account': ('spec.sparkConf: Forbidden: sparkConf must not set service accounts: use spec.driver.serviceAccount',),
    'spark-conf-value-too-long': ('spec.sparkConf.spark.x: Too long: may not be more than 4096 bytes', SKIPPED),
    'min-pause-not-below-interval': ('spec.checkpointing.minPause: Invalid value: minPause (1m) must be shorter than interval (30s)',),
    'unaligned-at-least-once': ('spec.checkpointing.unaligned.enabled: Invalid value: unaligned checkpoints need mode ExactlyOnce (at-least-once checkpoints never block channels, so there is nothing to unalign)',),
    'interval-without-unit': ('spec.checkpointing.interval: Invalid value: "30": spec.checkpointing.interval in body should match \'^[0-9]{1,6}(ms|s|m|h)$\'',),
    'interval-too-long': ('spec.checkpointing.interval: Too long: may not be more than 16 bytes', SKIPPED),
    'timeout-without-unit': ('spec.checkpointing.timeout: Invalid value: "30": spec.checkpointing.timeout in body should match \'^[0-9]{1,6}(ms|s|m|h)$\'',),
    'timeout-too-long': ('spec.checkpointing.timeout: Too long: may not be more than 16 bytes', SKIPPED),
    'minpause-without-unit': ('spec.checkpointing.minPause: Invalid value: "30": spec.checkpointing.minPause in body should match \'^[0-9]{1,6}(ms|s|m|h)$\'',),
    'minpause-too-long': ('spec.checkpointing.minPause: Too long: may not be more than 16 bytes', SKIPPED),
    'interval-zero': ('spec.checkpointing.minPause: Invalid value: minPause (0s) must be shorter than interval (0s)', 'spec.checkpointing.interval: Invalid value: "0s": interval must be positive'),
    'timeout-zero': ('spec.checkpointing.timeout: Invalid value: "0s": timeout must be positive',),
    'max-concurrent-zero': ('spec.checkpointing.maxConcurrent: Invalid value: 0: spec.checkpointing.maxConcurrent in body should be greater than or equal to 1',),
    'max-concurrent-above-16': ('spec.checkpointing.maxConcurrent: Invalid value: 17: spec.checkpointing.maxConcurrent in body should be less than or equal to 16',),
    'tolerable-failures-negative': ('spec.checkpointing.tolerableFailures: Invalid value: -1: spec.checkpointing.tolerableFailures in body should be greater than or equal to 0',),
    'mode-unknown': ('spec.checkpointing.mode: Unsupported value: "Maybe": supported values: "ExactlyOnce", "AtLeastOnce"', SKIPPED),
    'state-backend-unknown': ('spec.checkpointing.stateBackend.type: Unsupported value: "Rocks": supported values: "Memory", "Disk"', SKIPPED),
    'state-memory-too-long': ('spec.checkpointing.stateBackend.memory: Too long: may not be more than 16 bytes', SKIPPED),
    'state-memory-spark-style': ('spec.checkpointing.stateBackend.memory: Invalid value: "1g": must be a whole number of Mi or Gi, e.g. 256Mi or 1Gi',),
    'state-memory-below-16mi': ('spec.checkpointing.stateBackend.memory: Invalid value: "8Mi": must be at least 16Mi',),
    'aligned-timeout-without-unit': ('spec.checkpointing.unaligned.alignedTimeout: Invalid value: "5": spec.checkpointing.unaligned.alignedTimeout in body should match \'^[0-9]{1,6}(ms|s|m|h)$\'',),
    'aligned-timeout-too-long': ('spec.checkpointing.unaligned.alignedTimeout: Too long: may not be more than 16 bytes', SKIPPED),
    'checkpoints-retained-zero': ('spec.checkpointing.retained: Invalid value: 0: spec.checkpointing.retained in body should be greater than or equal to 1',),
    'checkpoints-retained-above-1000': ('spec.checkpointing.retained: Invalid value: 1001: spec.checkpointing.retained in body should be less than or equal to 1000',),
    'storage-without-endpoint': ('spec.storage.endpoint: Required value', SKIPPED),
    'storage-without-bucket': ('spec.storage.bucket: Required value', SKIPPED),
    'storage-without-credentialssecret': ('spec.storage.credentialsSecret: Required value', SKIPPED),
    'endpoint-too-long': ('spec.storage.endpoint: Too long: may not be more than 512 bytes', SKIPPED),
    'endpoint-without-scheme': ('spec.storage.endpoint: Invalid value: "minio:9000": endpoint must be an http:// or https:// URL with a host, an optional port and no path, e.g. http://minio.minio.svc:9000',),
    'endpoint-with-path': ('spec.storage.endpoint: Invalid value: "http://minio:9000/bucket": endpoint must be an http:// or https:// URL with a host, an optional port and no path, e.g. http://minio.minio.svc:9000',),
    'bucket-upper-case': ('spec.storage.bucket: Invalid value: "BAD": spec.storage.bucket in body should match \'^[a-z0-9][a-z0-9.-]*[a-z0-9]$\'',),
    'bucket-too-short': ('spec.storage.bucket: Invalid value: "ab": spec.storage.bucket in body should be at least 3 chars long',),
    'bucket-too-long': ('spec.storage.bucket: Too long: may not be more than 63 bytes', SKIPPED),
    'prefix-leading-slash': ('spec.storage.prefix: Invalid value: "/x": spec.storage.prefix in body should match \'^([A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*)?$\'',),
    'prefix-too-long': ('spec.storage.prefix: Too long: may not be more than 512 bytes', SKIPPED),
    'credentials-without-name': ('spec.storage.credentialsSecret.name: Required value', SKIPPED),
    'credentials-name-not-dns': ('spec.storage.credentialsSecret.name: Invalid value: "Bad": spec.storage.credentialsSecret.name in body should match \'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$\'',),
    'credentials-name-too-long': ('spec.storage.credentialsSecret.name: Too long: may not be more than 253 bytes', SKIPPED),
    'accesskeykey-with-space': ('spec.storage.credentialsSecret.accessKeyKey: Invalid value: "a b": spec.storage.credentialsSecret.accessKeyKey in body should match \'^[-._a-zA-Z0-9]+$\'',),
    'accesskeykey-too-long': ('spec.storage.credentialsSecret.accessKeyKey: Too long: may not be more than 253 bytes', SKIPPED),
    'secretkeykey-with-space': ('spec.storage.credentialsSecret.secretKeyKey: Invalid value: "a b": spec.storage.credentialsSecret.secretKeyKey in body should match \'^[-._a-zA-Z0-9]+$\'',),
    'secretkeykey-too-long': ('spec.storage.credentialsSecret.secretKeyKey: Too long: may not be more than 253 bytes', SKIPPED),
    'restart-type-unknown': ('spec.restartPolicy.type: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"', SKIPPED),
    'max-restarts-negative': ('spec.restartPolicy.maxRestarts: Invalid value: -1: spec.restartPolicy.maxRestarts in body should be greater than or equal to 0',),
    'attempts-per-record-zero': ('spec.restartPolicy.attemptsPerRecord: Invalid value: 0: spec.restartPolicy.attemptsPerRecord in body should be greater than or equal to 1',),
    'attempts-per-record-above-100': ('spec.restartPolicy.attemptsPerRecord: Invalid value: 101: spec.restartPolicy.attemptsPerRecord in body should be less than or equal to 100',),
    'window-without-unit': ('spec.restartPolicy.window: Invalid value: "1": spec.restartPolicy.window in body should match \'^[0-9]{1,6}(ms|s|m|h)$\'',),
    'window-too-long': ('spec.restartPolicy.window: Too long: may not be more than 16 bytes', SKIPPED),
    'resetafter-without-unit': ('spec.restartPolicy.resetAfter: Invalid value: "1": spec.restartPolicy.resetAfter in body should match \'^[0-9]{1,6}(ms|s|m|h)$\'',),
    'resetafter-too-long': ('spec.restartPolicy.resetAfter: Too long: may not be more than 16 bytes', SKIPPED),
    'restart-window-zero': ('spec.restartPolicy.window: Invalid value: "0s": window must be positive',),
    'backoff-initial-above-max': ('spec.restartPolicy.backoff.initial: Invalid value: backoff.initial (10m) must not exceed backoff.max (5m)',),
    'backoff-initial-without-unit': ('spec.restartPolicy.backoff.initial: Invalid value: "10": spec.restartPolicy.backoff.initial in body should match \'^[0-9]{1,6}(ms|s|m|h)$\'',),
    'backoff-initial-too-long': ('spec.restartPolicy.backoff.initial: Too long: may not be more than 16 bytes', SKIPPED),
    'backoff-max-without-unit': ('spec.restartPolicy.backoff.max: Invalid value: "10": spec.restartPolicy.backoff.max in body should match \'^[0-9]{1,6}(ms|s|m|h)$\'',),
    'backoff-max-too-long': ('spec.restartPolicy.backoff.max: Too long: may not be more than 16 bytes', SKIPPED),
    'backoff-initial-zero': ('spec.restartPolicy.backoff.initial: Invalid value: "0s": backoff.initial must be positive',),
    'multiplier-below-one': ('spec.restartPolicy.backoff.multiplier: Invalid value: 0.5: spec.restartPolicy.backoff.multiplier in body should be greater than or equal to 1',),
    'multiplier-above-100': ('spec.restartPolicy.backoff.multiplier: Invalid value: 101: spec.restartPolicy.backoff.multiplier in body should be less than or equal to 100',),
    'jitter-negative': ('spec.restartPolicy.backoff.jitter: Invalid value: -0.1: spec.restartPolicy.backoff.jitter in body should be greater than or equal to 0',),
    'jitter-above-one': ('spec.restartPolicy.backoff.jitter: Invalid value: 1.5: spec.restartPolicy.backoff.jitter in body should be less than or equal to 1',),
    'state-unknown': ('spec.state: Unsupported value: "Paused": supported values: "Running", "Suspended", "running", "suspended"', SKIPPED),
    'upgrade-mode-unknown': ('spec.upgradeMode: Unsupported value: "Blue-Green": supported values: "LastCheckpoint", "Savepoint", "Stateless", "last-checkpoint", "savepoint", "stateless"', SKIPPED),
    'restore-id-and-path': ('spec.restoreFrom: Invalid value: restoreFrom needs exactly one of checkpointId or path',),
    'restore-checkpoint-zero': ('spec.restoreFrom.checkpointId: Invalid value: 0: spec.restoreFrom.checkpointId in body should be greater than or equal to 1',),
    'restore-path-empty': ('spec.restoreFrom.path: Invalid value: "": spec.restoreFrom.path in body should be at least 1 chars long',),
    'restore-path-too-long': ('spec.restoreFrom.path: Too long: may not be more than 1024 bytes', SKIPPED),
    'savepoints-interval-without-unit': ('spec.savepoints.interval: Invalid value: "6": spec.savepoints.interval in body should match \'^[0-9]{1,6}(ms|s|m|h)$\'',),
    'savepoints-interval-too-long': ('spec.savepoints.interval: Too long: may not be more than 16 bytes', SKIPPED),
    'savepoints-interval-zero': ('spec.savepoints.interval: Invalid value: "0h": savepoints.interval must be positive',),
    'savepoints-retained-zero': ('spec.savepoints.retained: Invalid value: 0: spec.savepoints.retained in body should be greater than or equal to 1',),
    'savepoints-retained-above-100': ('spec.savepoints.retained: Invalid value: 101: spec.savepoints.retained in body should be less than or equal to 100',),
    'rollback-timeout-without-unit': ('spec.rollback.timeout: Invalid value: "5": spec.rollback.timeout in body should match \'^[0-9]{1,6}(ms|s|m|h)$\'',),
    'rollback-timeout-too-long': ('spec.rollback.timeout: Too long: may not be more than 16 bytes', SKIPPED),
    'rollback-timeout-zero': ('spec.rollback.timeout: Invalid value: "0s": rollback.timeout must be positive',),
    'parallelism-not-a-number': ('spec.parallelism: Invalid value: "string": spec.parallelism in body must be of type integer: "string"', SKIPPED),
    'image-not-a-string': ('spec.image: Invalid value: "integer": spec.image in body must be of type string: "integer"', SKIPPED),
    'pipeline-not-an-object': ('spec.pipeline: Invalid value: "string": spec.pipeline in body must be of type object: "string"', SKIPPED),
    'args-not-a-list': ('spec.pipeline.args: Invalid value: "string": spec.pipeline.args in body must be of type array: "string"', SKIPPED),
    'unaligned-enabled-not-a-boolean': ('spec.checkpointing.unaligned.enabled: Invalid value: "string": spec.checkpointing.unaligned.enabled in body must be of type boolean: "string"', SKIPPED),
    'multiplier-not-a-number': ('spec.restartPolicy.backoff.multiplier: Invalid value: "string": spec.restartPolicy.backoff.multiplier in body must be of type number: "string"', SKIPPED),
    'spark-conf-value-not-a-string': ('spec.sparkConf.spark.x: Invalid value: "integer": spec.sparkConf.spark.x in body must be of type string: "integer"', SKIPPED),
    'parallelism-above-int32': ('<nil>: Invalid value: "": Checked value must be of type integer with format int32 in spec.parallelism', 'spec.parallelism: Invalid value: parallelism must not exceed maxParallelism, the number of key groups the job state is split into'),
    'nonce-above-int64': ('spec.restartNonce: Invalid value: "float64": spec.restartNonce in body must be of type int64: "float64"', '<nil>: Invalid value: "": Checked value must be of type integer with format int64 in spec.restartNonce', SKIPPED),
    'unknown-spec-field': ('unknown field "spec.paralelism"',),
    'unknown-nested-field': ('unknown field "spec.checkpointing.intervall"',),
    'unknown-env-field': ('unknown field "spec.env[0].secret"',),
    'unknown-root-field': ('unknown field "extra"',),
    'phase-unknown': ('status.phase: Unsupported value: "Sleeping": supported values: "Pending", "Deploying", "Running", "Suspending", "Suspended", "Upgrading", "Restarting", "Failed", "Deleting", "Finished"', SKIPPED),
    'conditions-too-many': ('status.conditions: Too many: 17: must have at most 16 items', SKIPPED),
    'conditions-duplicate-type': ('status.conditions[1]: Duplicate value: {"type":"Ready"}',),
    'condition-without-type': ('status.conditions[0].type: Required value', SKIPPED),
    'condition-without-status': ('status.conditions[0].status: Required value', SKIPPED),
    'condition-type-too-long': ('status.conditions[0].type: Too long: may not be more than 316 bytes', SKIPPED),
    'condition-status-unknown': ('status.conditions[0].status: Unsupported value: "Yes": supported values: "True", "False", "Unknown"', SKIPPED),
    'condition-reason-too-long': ('status.conditions[0].reason: Too long: may not be more than 1024 bytes', SKIPPED),
    'condition-message-too-long': ('status.conditions[0].message: Too long: may not be more than 32768 bytes', SKIPPED),
    'condition-generation-negative': ('status.conditions[0].observedGeneration: Invalid value: -1: conditions[0].observedGeneration in body should be greater than or equal to 0',),
    'condition-time-not-a-time': ('status.conditions[0].lastTransitionTime: Invalid value: "yesterday": conditions[0].lastTransitionTime in body must be of type date-time: "yesterday"', SKIPPED),
    'consecutive-failures-negative': ('status.checkpoints.consecutiveFailures: Invalid value: -1: checkpoints.consecutiveFailures in body should be greater than or equal to 0',),
    'shared-bytes-negative': ('status.checkpoints.sharedBytes: Invalid value: -1: checkpoints.sharedBytes in body should be greater than or equal to 0',),
    'restart-count-negative': ('status.restarts.count: Invalid value: -1: restarts.count in body should be greater than or equal to 0',),
    'history-too-long': ('status.savepoints.history: Too many: 257: must have at most 256 items', SKIPPED),
    'savepoint-without-kind': ('status.savepoints.history[0].kind: Required value', SKIPPED),
    'savepoint-without-state': ('status.savepoints.history[0].state: Required value', SKIPPED),
    'savepoint-without-triggertime': ('status.savepoints.history[0].triggerTime: Required value', SKIPPED),
    'savepoint-kind-unknown': ('status.savepoints.history[0].kind: Unsupported value: "Nightly": supported values: "Manual", "Periodic", "Upgrade", "Suspend"', SKIPPED),
    'savepoint-state-unknown': ('status.savepoints.history[0].state: Unsupported value: "Lost": supported values: "InProgress", "Completed", "Failed", "Discarded"', SKIPPED),
    'ack-checkpointtriggernonce-without-value': ('status.nonces.checkpointTriggerNonce.value: Required value', SKIPPED),
    'ack-checkpointtriggernonce-without-outcome': ('status.nonces.checkpointTriggerNonce.outcome: Required value', SKIPPED),
    'ack-checkpointtriggernonce-without-time': ('status.nonces.checkpointTriggerNonce.time: Required value', SKIPPED),
    'ack-checkpointtriggernonce-outcome-unknown': ('status.nonces.checkpointTriggerNonce.outcome: Unsupported value: "Maybe": supported values: "InProgress", "Succeeded", "Failed", "Ignored", "Unknown"', SKIPPED),
    'ack-savepointtriggernonce-without-value': ('status.nonces.savepointTriggerNonce.value: Required value', SKIPPED),
    'ack-savepointtriggernonce-without-outcome': ('status.nonces.savepointTriggerNonce.outcome: Required value', SKIPPED),
    'ack-savepointtriggernonce-without-time': ('status.nonces.savepointTriggerNonce.time: Required value', SKIPPED),
    'ack-savepointtriggernonce-outcome-unknown': ('status.nonces.savepointTriggerNonce.outcome: Unsupported value: "Maybe": supported values: "InProgress", "Succeeded", "Failed", "Ignored", "Unknown"', SKIPPED),
    'ack-restartnonce-without-value': ('status.nonces.restartNonce.value: Required value', SKIPPED),
    'ack-restartnonce-without-outcome': ('status.nonces.restartNonce.outcome: Required value', SKIPPED),
    'ack-restartnonce-without-time': ('status.nonces.restartNonce.time: Required value', SKIPPED),
    'ack-restartnonce-outcome-unknown': ('status.nonces.restartNonce.outcome: Unsupported value: "Maybe": supported values: "InProgress", "Succeeded", "Failed", "Ignored", "Unknown"', SKIPPED),
    'ack-restorenonce-without-value': ('status.nonces.restoreNonce.value: Required value', SKIPPED),
    'ack-restorenonce-without-outcome': ('status.nonces.restoreNonce.outcome: Required value', SKIPPED),
    'ack-restorenonce-without-time': ('status.nonces.restoreNonce.time: Required value', SKIPPED),
    'ack-restorenonce-outcome-unknown': ('status.nonces.restoreNonce.outcome: Unsupported value: "Maybe": supported values: "InProgress", "Succeeded", "Failed", "Ignored", "Unknown"', SKIPPED),
    'rollout-without-state': ('status.rollout.state: Required value', SKIPPED),
    'rollout-without-since': ('status.rollout.since: Required value', SKIPPED),
    'rollout-state-unknown': ('status.rollout.state: Unsupported value: "Fine": supported values: "Verifying", "Stable", "RolledBack", "Unstable"', SKIPPED),
    'endpoint-not-http': ('spec.storage.endpoint: Invalid value: "ftp://minio:9000": endpoint must be an http:// or https:// URL with a host, an optional port and no path, e.g. http://minio.minio.svc:9000',),
    'min-pause-equal-in-another-unit': ('spec.checkpointing.minPause: Invalid value: minPause (60s) must be shorter than interval (1m)',),
    'executor-cores-default-to-one': ('spec.executor.instances: Invalid value: executor.instances × executor.cores must be at least parallelism: Spark gang-schedules one task slot per parallel slice',),  # noqa: RUF001
    'spark-conf-namespace-and-memory': ('spec.sparkConf: Forbidden: sparkConf must not set spark.kubernetes.namespace, spark.driver.memory: the operator manages these keys (use the matching spec fields)',),
    'spark-conf-container-image': ('spec.sparkConf: Forbidden: sparkConf must not set keys starting with spark.kubernetes.container.image: the operator manages authentication, images, secrets and volumes',),
    'interval-fraction': ('spec.checkpointing.interval: Invalid value: "1.5s": spec.checkpointing.interval in body should match \'^[0-9]{1,6}(ms|s|m|h)$\'',),
    'interval-two-units': ('spec.checkpointing.interval: Invalid value: "1m30s": spec.checkpointing.interval in body should match \'^[0-9]{1,6}(ms|s|m|h)$\'',),
    'memory-fraction': ('spec.executor.memory: Invalid value: "1.5Gi": memory must be a whole Kubernetes quantity such as 512Mi, 4Gi or 2000M (Spark-style values such as 1g are not accepted)',),
    'nonce-not-a-number': ('spec.restartNonce: Invalid value: "string": spec.restartNonce in body must be of type integer: "string"', SKIPPED),
}
# fmt: on
"""What the server answered to each case (``kubectl``'s causes, in its order)."""
