"""The CRD manifest as designed: names, columns, fields, enums, duration patterns.

Whether a real API server accepts it (structural schema, CEL compilation and cost) is
``tests/integration/crds``' question."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from cjob_operator.admission import cel

DURATION = "^[0-9]{1,6}(ms|s|m|h)$"


def iter_schema(schema: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, Any]]:
    """Every schema node with a readable location (``spec.sparkConf[*]``, ``x[*].y``)."""
    yield path or "<root>", schema
    for name, sub in (schema.get("properties") or {}).items():
        yield from iter_schema(sub, f"{path}.{name}" if path else name)
    for key in ("additionalProperties", "items"):
        if isinstance(schema.get(key), Mapping):
            yield from iter_schema(schema[key], f"{path}[*]")


def _spec_node(crd: dict[str, Any], *path: str) -> dict[str, Any]:
    node: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for name in path:
        node = node["properties"][name]
    return node


def test_names_scope_and_versions(crd: dict[str, Any]) -> None:
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "checkpointedjobs.checkpointed.dev"
    assert spec["group"] == "checkpointed.dev"
    assert spec["scope"] == "Namespaced"
    assert spec["names"] == {
        "kind": "CheckpointedJob",
        "listKind": "CheckpointedJobList",
        "plural": "checkpointedjobs",
        "singular": "checkpointedjob",
        "shortNames": ["cjob"],
    }
    [version] = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}


def test_printer_columns(crd: dict[str, Any]) -> None:
    columns = [
        (c["name"], c["type"], c["jsonPath"])
        for c in crd["spec"]["versions"][0]["additionalPrinterColumns"]
    ]
    assert columns == [
        ("Phase", "string", ".status.phase"),
        ("Parallelism", "integer", ".spec.parallelism"),
        ("Last Checkpoint", "integer", ".status.checkpoints.lastCompleted.id"),
        ("Checkpoint Age", "date", ".status.checkpoints.lastCompleted.time"),
        ("Restarts", "integer", ".status.restarts.count"),
        ("Age", "date", ".metadata.creationTimestamp"),
    ]


def test_only_pod_templates_and_intent_are_free_form(schema: dict[str, Any]) -> None:
    assert [
        path
        for path, node in iter_schema(schema)
        if node.get("x-kubernetes-preserve-unknown-fields")
    ] == [
        "spec.driver.podTemplate",
        "spec.executor.podTemplate",
        "status.intent",
    ]


SPEC_FIELDS = """
image imagePullPolicy pipeline pipeline.module pipeline.file pipeline.args parallelism
maxParallelism driver driver.cores driver.memory driver.serviceAccount driver.podTemplate
driver.terminationGracePeriodSeconds
executor executor.cores executor.memory executor.instances executor.podTemplate sparkConf
env env[*] env[*].name env[*].value env[*].valueFrom env[*].valueFrom.secretKeyRef
env[*].valueFrom.secretKeyRef.name env[*].valueFrom.secretKeyRef.key
env[*].valueFrom.secretKeyRef.optional env[*].valueFrom.configMapKeyRef
env[*].valueFrom.configMapKeyRef.name env[*].valueFrom.configMapKeyRef.key
env[*].valueFrom.configMapKeyRef.optional env[*].valueFrom.fieldRef
env[*].valueFrom.fieldRef.fieldPath env[*].valueFrom.fieldRef.apiVersion
checkpointing checkpointing.interval checkpointing.timeout checkpointing.minPause
checkpointing.maxConcurrent checkpointing.tolerableFailures checkpointing.mode
checkpointing.unaligned checkpointing.unaligned.enabled checkpointing.unaligned.alignedTimeout
checkpointing.retained checkpointing.incremental checkpointing.localRecovery
checkpointing.stateBackend checkpointing.stateBackend.type checkpointing.stateBackend.memory
storage storage.endpoint storage.bucket
storage.prefix storage.credentialsSecret storage.credentialsSecret.name
storage.credentialsSecret.accessKeyKey storage.credentialsSecret.secretKeyKey restartPolicy
restartPolicy.type restartPolicy.maxRestarts restartPolicy.attemptsPerRecord restartPolicy.window restartPolicy.backoff
restartPolicy.backoff.initial restartPolicy.backoff.max restartPolicy.backoff.multiplier
restartPolicy.backoff.jitter restartPolicy.resetAfter state upgradeMode restoreFrom
restoreFrom.checkpointId restoreFrom.path restoreNonce restartNonce checkpointTriggerNonce
savepointTriggerNonce allowFreshStart savepoints savepoints.interval savepoints.retained
rollback rollback.enabled rollback.timeout
""".split()  # noqa: SIM905 (groups of names per line read better than a list literal)

STATUS_FIELDS = """
phase conditions conditions[*].type conditions[*].status conditions[*].reason
conditions[*].message conditions[*].lastTransitionTime conditions[*].observedGeneration
observedGeneration driver driver.pod driver.service driver.startTime jobState checkpoints
checkpoints.lastCompleted checkpoints.lastCompleted.id checkpoints.lastCompleted.path
checkpoints.lastCompleted.time checkpoints.lastCompleted.durationSeconds
checkpoints.lastCompleted.sizeBytes checkpoints.lastCompleted.uploadedBytes
checkpoints.lastCompleted.trigger checkpoints.lastFailed
checkpoints.lastFailed.id checkpoints.lastFailed.reason checkpoints.lastFailed.time
checkpoints.consecutiveFailures checkpoints.lastSavepoint checkpoints.lastSavepoint.id
checkpoints.lastSavepoint.path checkpoints.lastSavepoint.time checkpoints.sharedBytes
restarts restarts.count
restarts.lastTime restarts.lastReason restarts.nextAttemptTime restarts.recent restarts.recent[*]
lastReconciledSpec intent error
savepoints savepoints.history savepoints.history[*] savepoints.history[*].id
savepoints.history[*].path savepoints.history[*].kind savepoints.history[*].state
savepoints.history[*].triggerTime savepoints.history[*].completionTime
savepoints.history[*].message savepoints.lastPeriodicTriggerTime nonces
nonces.checkpointTriggerNonce nonces.checkpointTriggerNonce.value nonces.checkpointTriggerNonce.outcome nonces.checkpointTriggerNonce.time nonces.checkpointTriggerNonce.settledTime nonces.checkpointTriggerNonce.snapshotId nonces.checkpointTriggerNonce.message
nonces.savepointTriggerNonce nonces.savepointTriggerNonce.value nonces.savepointTriggerNonce.outcome nonces.savepointTriggerNonce.time nonces.savepointTriggerNonce.settledTime nonces.savepointTriggerNonce.snapshotId nonces.savepointTriggerNonce.message
nonces.restartNonce nonces.restartNonce.value nonces.restartNonce.outcome nonces.restartNonce.time nonces.restartNonce.settledTime nonces.restartNonce.snapshotId nonces.restartNonce.message
nonces.restoreNonce nonces.restoreNonce.value nonces.restoreNonce.outcome nonces.restoreNonce.time nonces.restoreNonce.settledTime nonces.restoreNonce.snapshotId nonces.restoreNonce.message
lastStableSpec rollout rollout.state rollout.since rollout.message
""".split()  # noqa: SIM905


def _declared(schema: dict[str, Any], root: str) -> list[str]:
    prefix = f"{root}."
    return [p[len(prefix) :] for p, _ in iter_schema(schema) if p.startswith(prefix)]


def test_spec_declares_exactly_the_designed_fields(schema: dict[str, Any]) -> None:
    expected = [*SPEC_FIELDS, "pipeline.args[*]", "sparkConf[*]"]
    assert sorted(_declared(schema, "spec")) == sorted(expected)


def test_status_declares_exactly_the_designed_fields(schema: dict[str, Any]) -> None:
    assert sorted(_declared(schema, "status")) == sorted([*STATUS_FIELDS, "conditions[*]"])


@pytest.mark.parametrize(
    ("path", "values"),
    [
        (("spec", "imagePullPolicy"), ["Always", "IfNotPresent", "Never"]),
        (("spec", "checkpointing", "mode"), ["ExactlyOnce", "AtLeastOnce"]),
        (("spec", "restartPolicy", "type"), ["Always", "OnFailure", "Never"]),
        (("spec", "state"), ["Running", "Suspended", "running", "suspended"]),
        (
            ("spec", "upgradeMode"),
            [
                "LastCheckpoint",
                "Savepoint",
                "Stateless",
                "last-checkpoint",
                "savepoint",
                "stateless",
            ],
        ),
        (
            ("status", "phase"),
            [
                "Pending",
                "Deploying",
                "Running",
                "Suspending",
                "Suspended",
                "Upgrading",
                "Restarting",
                "Failed",
                "Deleting",
                "Finished",
            ],
        ),
    ],
)
def test_enums(crd: dict[str, Any], path: tuple[str, ...], values: list[str]) -> None:
    assert _spec_node(crd, *path)["enum"] == values


def test_conditions_are_a_map_keyed_by_type(crd: dict[str, Any]) -> None:
    conditions = _spec_node(crd, "status", "conditions")
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]


def test_every_duration_field_uses_one_pattern(schema: dict[str, Any]) -> None:
    durations = [path for path, node in iter_schema(schema) if node.get("pattern") == DURATION]
    assert sorted(durations) == sorted(
        f"spec.{p}"
        for p in (
            "checkpointing.interval",
            "checkpointing.timeout",
            "checkpointing.minPause",
            "checkpointing.unaligned.alignedTimeout",
            "restartPolicy.window",
            "restartPolicy.backoff.initial",
            "restartPolicy.backoff.max",
            "restartPolicy.resetAfter",
            "savepoints.interval",
            "rollback.timeout",
        )
    )


def test_rules_guard_duration_calls_with_the_schema_pattern(schema: dict[str, Any]) -> None:
    """A malformed duration must give the pattern message only, never an evaluation error."""
    calls = 0
    for _, node in iter_schema(schema):
        for rule in cel.rules_of(node):
            operands = re.findall(r"duration\((self(?:\.\w+)*)\)", rule.rule)
            for operand in set(operands):
                calls += 1
                guard = f"!{operand}.matches('{DURATION}')"
                assert guard in rule.rule, rule.rule
    assert calls == 12
