"""The CheckpointedJob CRD judged by a real kube-apiserver (v1.37.2, the ``kube_api`` fixture).

Every CEL rule (``x-kubernetes-validations``) and every schema constraint of
``crds/checkpointedjobs.checkpointed.dev.yaml`` has a case in ``crd_cases.CASES`` that
breaks it: ``kubectl apply`` (for the status, ``kubectl patch --subresource=status``) must
exit non-zero with the server's own causes (field path and message) listed in
``crd_cases.CAUSES``. The rules and constraints are enumerated from the CRD file
(:func:`constraints`), so one without a case fails
:func:`test_every_rule_and_constraint_has_a_case`.

The operator's own admission validator (:mod:`cjob_operator.admission`, behind ``cjob
validate`` and the operator's re-check of every object it reads) must agree with the server
on the same table: it refuses every case with the same causes, accepts what the server
accepts and stores the same defaults.

One namespace (``crd_cases.NAMESPACE``) for the module; one object name per case.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import waiting
import yaml
from cjob_operator_testing import crd_cases, envtest
from cjob_operator_testing.crd_cases import CASES, CAUSES, NAMESPACE, Case
from kube_local import control_plane as control_plane_mod

from cjob_operator import admission
from cjob_operator.model import spec as spec_model

ROOT = Path(__file__).resolve().parents[3]
CRD_FILE = ROOT / "crds" / "checkpointedjobs.checkpointed.dev.yaml"
EXAMPLES = sorted((ROOT / "examples" / "manifests").glob("*.yaml"))
STATUS_TARGET = "status-target"
CONSTRAINT_KEYWORDS = (
    "enum",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "x-kubernetes-list-type",
)
"""Schema keywords that refuse a value; each occurrence needs a case (``required`` and
``x-kubernetes-validations`` too, per field and per rule)."""
ALSO_COVERED = (
    "spec.parallelism type",
    "spec.image type",
    "spec.pipeline type",
    "spec.pipeline.args type",
    "spec.checkpointing.unaligned.enabled type",
    "spec.restartPolicy.backoff.multiplier type",
    "spec.sparkConf[*] type",
    "spec.restartNonce type",
    "spec.parallelism format",
    "spec.restartNonce format",
    "status.conditions[*].lastTransitionTime format",
    "<root> additionalProperties",
    "spec additionalProperties",
    "spec.checkpointing additionalProperties",
    "spec.env[*] additionalProperties",
)
"""What every node has (a type, closed properties) or many share (formats): one case per
kind (string, integer, number, boolean, object, array, map value; int32, int64,
date-time; unknown fields at the root, in spec, nested, in a list item)."""


TRANSITION_RULES = ("spec.maxParallelism rule[0]",)
"""Rules over ``oldSelf``: they run on update only, and their case is an update
(:func:`test_changing_max_parallelism_is_refused_by_the_transition_rule`)."""


def schema_nodes(
    schema: Mapping[str, Any], path: str = ""
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every node of ``schema`` with its path (``<root>``, ``spec.x``, ``spec.m[*]``)."""
    yield path or "<root>", schema
    for name, sub in (schema.get("properties") or {}).items():
        yield from schema_nodes(sub, f"{path}.{name}" if path else name)
    for key in ("additionalProperties", "items"):
        if isinstance(schema.get(key), Mapping):
            yield from schema_nodes(schema[key], f"{path}[*]")


def transition_rules(schema: Mapping[str, Any]) -> Iterator[str]:
    for where, node in schema_nodes(schema):
        for index, rule in enumerate(node.get("x-kubernetes-validations") or ()):
            if re.search(r"\boldSelf\b", rule["rule"]):
                yield f"{where} rule[{index}]"


def constraints(schema: Mapping[str, Any]) -> Iterator[str]:
    """Every rule and refusing constraint of ``schema``, named ``"<path> <keyword>"``."""
    for where, node in schema_nodes(schema):
        for index, _ in enumerate(node.get("x-kubernetes-validations") or ()):
            yield f"{where} rule[{index}]"
        for name in node.get("required") or ():
            yield f"{where} required {name}"
        for keyword in CONSTRAINT_KEYWORDS:
            if keyword in node:
                yield f"{where} {keyword}"


def crd_schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD_FILE.read_text())
    found: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return found


def refused_causes(stderr: str) -> list[str]:
    """The causes of a refusal as ``kubectl`` prints them (one, or one per ``*`` bullet)."""
    decoding = re.search(r"strict decoding error: (.*)$", stderr.strip())
    if decoding:
        return decoding.group(1).split(", ")
    invalid = re.search(r'The \w+ "[^"]*" is invalid: ?(.*)', stderr.strip(), re.DOTALL)
    assert invalid, f"not a validation refusal: {stderr!r}"
    body = invalid.group(1).strip()
    if body.startswith("* "):
        return [line.removeprefix("* ") for line in body.splitlines() if line.startswith("* ")]
    return [body]


Plane = control_plane_mod.ControlPlane


def kubectl(plane: Plane, *args: str, stdin: Any = None) -> subprocess.CompletedProcess[str]:
    text = None if stdin is None else json.dumps(stdin)
    return envtest.kubectl(plane, *args, stdin=text)


def stored(plane: Plane, name: str) -> dict[str, Any]:
    got = kubectl(plane, "-n", NAMESPACE, "get", "checkpointedjob", name, "-o", "json")
    assert got.returncode == 0, got.stderr
    found: dict[str, Any] = json.loads(got.stdout)
    return found


@pytest.fixture(scope="module")
def server(kube_api: Plane) -> Iterator[Plane]:
    """The CRD installed and Established, the module's namespace, and a valid job whose
    status the status cases patch."""
    applied = kubectl(kube_api, "apply", "-f", str(CRD_FILE))
    assert applied.returncode == 0, applied.stderr
    established = kubectl(
        kube_api,
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/checkpointedjobs.checkpointed.dev",
    )
    assert established.returncode == 0, established.stderr
    created = kubectl(kube_api, "create", "namespace", NAMESPACE)
    assert created.returncode == 0, created.stderr
    target = kubectl(kube_api, "apply", "-f", "-", stdin=crd_cases.minimal_job(STATUS_TARGET))
    assert target.returncode == 0, target.stderr
    yield kube_api
    kubectl(kube_api, "delete", "namespace", NAMESPACE, "--wait=false")


@pytest.fixture(scope="module")
def answers(server: Plane) -> dict[str, subprocess.CompletedProcess[str]]:
    """The server's answer to each case, asked once (both tests of a case read it)."""
    return {}


def ask(server: Plane, answers: dict[str, Any], case: Case) -> subprocess.CompletedProcess[str]:
    if case.id not in answers:
        if case.status:
            args = ("-n", NAMESPACE, "patch", "checkpointedjob", STATUS_TARGET)
            patch = json.dumps(case.patch)
            answers[case.id] = kubectl(
                server, *args, "--subresource=status", "--type=merge", "-p", patch
            )
        else:
            job = crd_cases.manifest(case, CASES.index(case))
            answers[case.id] = kubectl(server, "apply", "-f", "-", stdin=job)
    answer: subprocess.CompletedProcess[str] = answers[case.id]
    return answer


def test_the_crd_is_accepted_and_established(server: Plane) -> None:
    again = kubectl(server, "apply", "-f", str(CRD_FILE))
    conditions = kubectl(
        server,
        "get",
        "crd/checkpointedjobs.checkpointed.dev",
        "-o",
        "jsonpath={range .status.conditions[*]}{.type}={.status} {end}",
    )

    assert again.returncode == 0, again.stderr
    assert "unchanged" in again.stdout
    assert {"Established=True", "NamesAccepted=True"} <= set(conditions.stdout.split())


@pytest.mark.parametrize(
    "expression",
    [
        "'parallelism (' + string(self.parallelism) + ') must not exceed maxParallelism'",
        "'must not set ' + ['spark.master'].filter(k, k in self.sparkConf).join(', ')",
    ],
    ids=["string-of-int", "filter-join"],
)
def test_a_message_expression_of_unbounded_size_is_refused_for_its_cost(
    server: Plane, expression: str
) -> None:
    """Why the CRD builds its messages from bounded strings only: the server cannot bound
    the size of ``string(int)`` or of a filtered list's ``join``, and refuses the CRD."""
    crd = yaml.safe_load(CRD_FILE.read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["x-kubernetes-validations"][0]["messageExpression"] = expression

    answer = kubectl(server, "apply", "--dry-run=server", "-f", "-", stdin=crd)

    assert answer.returncode != 0
    assert (
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0]"
        ".messageExpression: Forbidden: estimated messageExpression cost exceeds budget by "
        "factor of more than 100x"
    ) in answer.stderr


def test_every_rule_and_constraint_has_a_case() -> None:
    targeted = {target for case in CASES for target in case.targets} | set(TRANSITION_RULES)
    declared = set(constraints(crd_schema()))

    assert sorted(transition_rules(crd_schema())) == sorted(TRANSITION_RULES)

    assert sorted(declared - targeted) == [], "rules or constraints without a case"
    assert sorted(targeted - declared - set(ALSO_COVERED)) == [], "cases of nothing declared"
    assert sorted(set(ALSO_COVERED) - targeted) == []
    assert sorted(CAUSES) == sorted(case.id for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_the_server_refuses_the_case_with_its_causes(
    server: Plane, answers: dict[str, Any], case: Case
) -> None:
    answer = ask(server, answers, case)

    assert answer.returncode != 0, f"accepted: {answer.stdout}"
    assert refused_causes(answer.stderr) == list(CAUSES[case.id])


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_the_admission_validator_refuses_the_case_as_the_server_does(
    server: Plane, answers: dict[str, Any], case: Case
) -> None:
    answer = ask(server, answers, case)
    validator = admission.validator()
    if case.status:
        old = stored(server, STATUS_TARGET)
        result = validator.validate_status_update(crd_cases.merged(old, case.patch), old)
    else:
        result = validator.validate_create(crd_cases.manifest(case, CASES.index(case)))

    assert answer.returncode != 0
    assert sorted(result.messages) == sorted(refused_causes(answer.stderr))


@pytest.mark.parametrize("edge", sorted(crd_cases.ACCEPTED))
def test_the_server_and_the_validator_accept_the_edges(server: Plane, edge: str) -> None:
    job = crd_cases.merged(crd_cases.minimal_job(f"ok-{edge}"[:40]), crd_cases.ACCEPTED[edge])

    applied = kubectl(server, "apply", "-f", "-", stdin=job)

    assert applied.returncode == 0, applied.stderr
    result = admission.validator().validate_create(job)
    assert result.ok, result.messages
    assert result.object["spec"] == stored(server, job["metadata"]["name"])["spec"]


def created_raw(plane: Plane, job: Mapping[str, Any]) -> str | None:
    """POST ``job`` as ``kubectl apply`` would create it (strict field validation); the
    ``Status.message`` of the refusal, or None when created."""
    body = dict(job)
    namespace = body["metadata"]["namespace"]
    url = (
        f"{plane.url}/apis/checkpointed.dev/v1alpha1/namespaces/{namespace}/checkpointedjobs"
        "?fieldValidation=Strict"
    )
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, context=plane.client_context(), timeout=30):
            return None
    except urllib.error.HTTPError as refused:
        message: str = json.load(refused)["message"]
        return message


@pytest.mark.parametrize(
    "case", [case for case in CASES if not case.status], ids=lambda case: case.id
)
def test_the_refusal_sentence_is_the_servers_status_message(server: Plane, case: Case) -> None:
    """What the operator writes to a refused job's status and ``cjob validate`` prints:
    the ``Status.message`` of the server's refusal, word for word."""
    job = crd_cases.manifest(case, 5000 + CASES.index(case))

    assert admission.refusal(job) == created_raw(server, job)


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
    for step in (
        kubectl(server, "apply", "-f", "-", stdin=_widget_crd(10)),
        kubectl(
            server, "wait", "--for=condition=Established", "crd/widgets.crdtest.checkpointed.dev"
        ),
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
