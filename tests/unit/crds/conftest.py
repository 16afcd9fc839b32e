"""Fixtures for the CRD tests: the CRD file, its schema, the operator's admission
validator (:mod:`cjob_operator.admission`, used by the operator and ``cjob validate``) and
the minimal example. What a real API server makes of the CRD is tested in
``tests/integration/crds``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from cjob_operator import admission

ROOT = Path(__file__).resolve().parents[3]
CRD_PATH = ROOT / "crds" / "checkpointedjobs.checkpointed.dev.yaml"
EXAMPLES = ROOT / "examples" / "manifests"


@pytest.fixture(scope="session")
def crd() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(CRD_PATH.read_text())
    return loaded


@pytest.fixture(scope="session")
def schema(crd: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return found


@pytest.fixture(scope="session")
def validator(crd: dict[str, Any]) -> admission.CustomResourceValidator:
    return admission.CustomResourceValidator(crd)


@pytest.fixture
def minimal() -> dict[str, Any]:
    """A fresh copy of examples/manifests/minimal.yaml."""
    loaded: dict[str, Any] = yaml.safe_load((EXAMPLES / "minimal.yaml").read_text())
    return loaded
