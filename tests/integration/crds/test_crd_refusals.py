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
accepts.

What the server stores and which updates it admits is ``test_crd_storage.py``'s. One
namespace (``crd_cases.NAMESPACE``, the ``server`` fixture's) for the folder; one object
name per case.
"""

from __future__ import annotations

import json
import re
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import yaml
from cjob_operator_testing import crd_cases
from cjob_operator_testing.crd_cases import CASES, CAUSES, NAMESPACE, Case
from cjob_operator_testing.crd_server import (
    CRD_FILE,
    STATUS_TARGET,
    Plane,
    kubectl,
    refused_causes,
    stored,
)

from cjob_operator import admission

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
(``test_crd_storage.py``'s
:func:`test_changing_max_parallelism_is_refused_by_the_transition_rule`)."""


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
