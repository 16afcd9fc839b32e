"""The operator's admission check: the CRD it ships, and the sentence it refuses with."""

from __future__ import annotations

import copy
import doctest
import importlib.resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from cjob_operator import admission
from cjob_operator.admission import errors

ROOT = Path(__file__).resolve().parents[3]
REPOSITORY_CRD = ROOT / "crds" / admission.CRD_FILE
CHART_CRD = ROOT / "charts" / "checkpointed-operator" / "crds" / admission.CRD_FILE


def _packaged() -> bytes:
    return importlib.resources.files(admission).joinpath(admission.CRD_FILE).read_bytes()


@pytest.mark.parametrize("copy_path", [REPOSITORY_CRD, CHART_CRD], ids=["crds", "chart"])
def test_the_packaged_crd_is_the_repository_crd_byte_for_byte(copy_path: Path) -> None:
    assert _packaged() == copy_path.read_bytes(), (
        f"cjob_operator/admission/{admission.CRD_FILE} differs from "
        f"{copy_path.relative_to(ROOT)}: copy crds/{admission.CRD_FILE} over it"
    )


def test_the_validator_judges_by_the_storage_version_of_the_packaged_crd() -> None:
    crd = admission.bundled_crd()

    assert admission.validator().api_version == "checkpointed.dev/v1alpha1"
    assert admission.validator().kind == crd["spec"]["names"]["kind"] == "CheckpointedJob"


def _minimal() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "examples/manifests/minimal.yaml").read_text())
    return loaded


def test_an_admissible_object_is_admitted_whatever_its_metadata_and_status() -> None:
    job = _minimal()
    job["metadata"].update(
        resourceVersion="42", uid="u-1", annotations={"a": "b"}, finalizers=["x/y"]
    )
    job["status"] = {"phase": "Running", "anything": {"the": "operator writes"}}

    assert admission.refusal(job) is None


def test_a_refusal_is_the_api_servers_rejection_sentence() -> None:
    job = _minimal()
    job["spec"]["storage"]["bucket"] = "Checkpoints"

    assert admission.refusal(job) == (
        'CheckpointedJob.checkpointed.dev "running-count" is invalid: spec.storage.bucket: '
        'Invalid value: "Checkpoints": spec.storage.bucket in body should match '
        "'^[a-z0-9][a-z0-9.-]*[a-z0-9]$'"
    )


def test_a_misspelt_field_is_refused_as_kubectl_apply_refuses_it() -> None:
    job = _minimal()
    job["spec"]["checkpointing"] = {"intervall": "10s"}

    assert admission.refusal(job) == (
        'CheckpointedJob in version "v1alpha1" cannot be handled as a CheckpointedJob: '
        'strict decoding error: unknown field "spec.checkpointing.intervall"'
    )


def test_refusal_does_not_change_the_object_it_judges() -> None:
    job = _minimal()
    job["spec"]["parallelism"] = "two"
    before = copy.deepcopy(job)

    assert admission.refusal(job) is not None
    assert job == before


@pytest.mark.parametrize("module", [admission, errors], ids=lambda m: m.__name__)
def test_doctests(module: Any) -> None:
    failures, attempted = doctest.testmod(module, raise_on_error=False)
    assert (failures, attempted > 0) == (0, True)


def test_an_unknown_root_field_is_refused_as_kubectl_apply_refuses_it() -> None:
    job = _minimal()
    job["extra"] = 1

    assert admission.refusal(job) == (
        'CheckpointedJob in version "v1alpha1" cannot be handled as a CheckpointedJob: '
        'strict decoding error: unknown field "extra"'
    )
