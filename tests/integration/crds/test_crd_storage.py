"""What a real kube-apiserver stores for a CheckpointedJob, and which updates it admits, and
that the operator's admission validator (:mod:`cjob_operator.admission`) does the same:
the CRD's defaults (and the operator's, which must be the same), the examples, pruning of
unknown fields, the transition rule on ``maxParallelism``, and validation ratcheting.

The refusals of the CRD's rules and constraints are ``test_crd_refusals.py``'s.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import waiting
import yaml
from cjob_operator_testing import crd_cases, envtest
from cjob_operator_testing.crd_cases import NAMESPACE
from cjob_operator_testing.crd_server import ROOT, Plane, kubectl, refused_causes, stored

from cjob_operator import admission
from cjob_operator.model import spec as spec_model

EXAMPLES = sorted((ROOT / "examples" / "manifests").glob("*.yaml"))


MINIMAL_STORED_SPEC = {
    "image": "cjob:1",
    "imagePullPolicy": "IfNotPresent",
    "pipeline": {"module": "demo"},
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
        "localRecovery": False,
        "stateBackend": {"type": "Memory", "memory": "256Mi"},
    },
    "storage": {
        "endpoint": "http://minio:9000",
        "bucket": "checkpoints",
        "prefix": "cjob",
        "credentialsSecret": {
            "name": "minio",
            "accessKeyKey": "AWS_ACCESS_KEY_ID",
            "secretKeyKey": "AWS_SECRET_ACCESS_KEY",
        },
    },
    "restartPolicy": {
        "type": "OnFailure",
        "maxRestarts": 10,
        "attemptsPerRecord": 3,
        "window": "1h",
        "backoff": {"initial": "10s", "max": "5m", "multiplier": 2, "jitter": 0.2},
        "resetAfter": "10m",
    },
    "state": "Running",
    "upgradeMode": "LastCheckpoint",
    "allowFreshStart": False,
    "savepoints": {"retained": 5},
    "rollback": {"enabled": False, "timeout": "5m"},
}


def test_a_minimal_job_is_accepted_and_stored_with_the_crd_defaults(server: Plane) -> None:
    """The CRD-defaults contract, tested here once: the server stores these defaults, the
    operator's admission validator stores the same, and the operator reads the spec as
    written exactly as it reads the spec as stored (its own defaults are the CRD's)."""
    job = crd_cases.minimal_job("minimal")
    job["status"] = {"phase": "Running"}

    applied = kubectl(server, "apply", "-f", "-", stdin=job)
    back = stored(server, "minimal")

    assert applied.returncode == 0, applied.stderr
    assert back["spec"] == MINIMAL_STORED_SPEC
    assert "status" not in back, "the status is a subresource: dropped on create"
    assert admission.validator().validate_create(job).object["spec"] == back["spec"]
    as_written = spec_model.JobSpec.from_storage(job["spec"])
    assert as_written == spec_model.JobSpec.from_storage(back["spec"])  # ``raw`` not compared


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_is_accepted_and_stored_as_the_validator_stores_it(
    server: Plane, path: Path
) -> None:
    job = yaml.safe_load(path.read_text())
    job["metadata"]["namespace"] = NAMESPACE

    applied = kubectl(server, "apply", "-f", "-", stdin=job)
    back = stored(server, job["metadata"]["name"])

    assert applied.returncode == 0, applied.stderr
    assert applied.stderr == "", "no warnings"
    result = admission.validator().validate_create(job)
    assert result.ok and not result.warnings
    assert result.object["spec"] == back["spec"]


def test_unknown_fields_are_pruned_for_a_client_that_does_not_validate(server: Plane) -> None:
    job = crd_cases.minimal_job("pruned")
    job["spec"]["paralelism"] = 4
    job["spec"]["checkpointing"] = {"intervall": "10s"}

    applied = kubectl(server, "apply", "--validate=false", "-f", "-", stdin=job)
    back = stored(server, "pruned")

    assert applied.returncode == 0, applied.stderr
    assert "paralelism" not in back["spec"]
    assert "intervall" not in back["spec"]["checkpointing"]
    result = admission.validator().validate_create(job, strict=False)
    assert result.ok
    assert result.object["spec"] == back["spec"]


@pytest.fixture
def running(server: Plane) -> Iterator[dict[str, Any]]:
    job = crd_cases.minimal_job("updated")
    job["spec"]["maxParallelism"] = 64
    created = kubectl(server, "apply", "-f", "-", stdin=job)
    assert created.returncode == 0, created.stderr
    yield job
    kubectl(server, "-n", NAMESPACE, "delete", "checkpointedjob", "updated", "--wait=false")


MAX_PARALLELISM_IMMUTABLE = (
    "spec.maxParallelism: Invalid value: 128: maxParallelism is immutable: it fixes how keyed "
    "state is split into key groups; create a new job to change it"
)


def test_changing_max_parallelism_is_refused_by_the_transition_rule(
    server: Plane, running: dict[str, Any]
) -> None:
    old = stored(server, "updated")
    changed = copy.deepcopy(running)
    changed["spec"]["maxParallelism"] = 128

    answer = kubectl(server, "apply", "-f", "-", stdin=changed)

    assert answer.returncode != 0
    assert refused_causes(answer.stderr) == [MAX_PARALLELISM_IMMUTABLE]
    result = admission.validator().validate_update(changed, old)
    assert result.messages == [MAX_PARALLELISM_IMMUTABLE]


def test_rescaling_and_nonces_are_accepted_updates(server: Plane, running: dict[str, Any]) -> None:
    old = stored(server, "updated")
    changed = copy.deepcopy(running)
    changed["spec"].update(parallelism=8, restartNonce=2, state="Suspended")

    answer = kubectl(server, "apply", "-f", "-", stdin=changed)

    assert answer.returncode == 0, answer.stderr
    back = stored(server, "updated")
    assert (back["spec"]["parallelism"], back["spec"]["maxParallelism"]) == (8, 64)
    assert admission.validator().validate_update(changed, old).ok


def test_a_manifest_that_drops_max_parallelism_is_refused(
    server: Plane, running: dict[str, Any]
) -> None:
    """``kubectl apply`` deletes a field its last applied manifest set and the new one does
    not; the server defaults it again (128), and the transition rule refuses the change."""
    old = stored(server, "updated")
    changed = copy.deepcopy(running)
    del changed["spec"]["maxParallelism"]

    answer = kubectl(server, "apply", "-f", "-", stdin=changed)

    assert answer.returncode != 0
    assert refused_causes(answer.stderr) == [MAX_PARALLELISM_IMMUTABLE]
    assert stored(server, "updated")["spec"]["maxParallelism"] == 64
    result = admission.validator().validate_update(changed, old)
    assert result.messages == [MAX_PARALLELISM_IMMUTABLE]


def _widget_crd(maximum: int) -> dict[str, Any]:
    """A CRD of our own to tighten under stored objects (the CheckpointedJob CRD stays)."""
    spec_schema = {
        "type": "object",
        "properties": {
            "size": {"type": "integer", "maximum": maximum},
            "label": {
                "type": "string",
                "maxLength": 16,
                "x-kubernetes-validations": [
                    {"rule": f"size(self) <= {maximum}", "message": "label too long"}
                ],
            },
            "note": {"type": "string", "maxLength": 16},
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.crdtest.checkpointed.dev"},
        "spec": {
            "group": "crdtest.checkpointed.dev",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": spec_schema},
                        }
                    },
                }
            ],
        },
    }


def test_unchanged_values_a_tightened_crd_refuses_are_ratcheted(server: Plane) -> None:
    """Validation ratcheting (GA in 1.33): after the CRD tightens, an update that leaves an
    invalid value as it was is admitted; changing it to another invalid value is not."""
    widget = {
        "apiVersion": "crdtest.checkpointed.dev/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": NAMESPACE},
        "spec": {"size": 8, "label": "12345678", "note": "a"},
    }
    applied = kubectl(server, "apply", "-f", "-", stdin=_widget_crd(10))
    assert applied.returncode == 0, applied.stderr
    envtest.wait_established(server, "widgets.crdtest.checkpointed.dev")
    for step in (
        kubectl(server, "apply", "-f", "-", stdin=widget),
        kubectl(server, "apply", "-f", "-", stdin=_widget_crd(4)),
    ):
        assert step.returncode == 0, step.stderr
    probe = merged_spec(widget, size=9)
    probe["metadata"]["name"] = "probe"
    waiting.wait_until(
        lambda: kubectl(server, "apply", "--dry-run=server", "-f", "-", stdin=probe).returncode,
        30,
        "the API server to serve the tightened Widget schema",
    )
    tightened = admission.CustomResourceValidator(_widget_crd(4))
    old = json.loads(kubectl(server, "-n", NAMESPACE, "get", "widget", "w", "-o", "json").stdout)
    note_changed = merged_spec(widget, note="b")
    size_changed = merged_spec(widget, size=9)

    kept = kubectl(server, "apply", "-f", "-", stdin=note_changed)
    refused = kubectl(server, "apply", "-f", "-", stdin=size_changed)

    assert kept.returncode == 0, kept.stderr
    assert tightened.validate_update(note_changed, old).ok
    assert refused.returncode != 0
    server_causes = refused_causes(refused.stderr)
    assert server_causes == [
        "spec.size: Invalid value: 9: spec.size in body should be less than or equal to 4"
    ]
    assert tightened.validate_update(size_changed, old).messages == server_causes
    kubectl(server, "delete", "crd", "widgets.crdtest.checkpointed.dev", "--wait=false")


def merged_spec(obj: dict[str, Any], **spec: Any) -> dict[str, Any]:
    changed = copy.deepcopy(obj)
    changed["spec"].update(spec)
    return changed
