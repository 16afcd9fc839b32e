"""Fixtures for the CRD tests.

The offline validator is product code (:mod:`cjob_operator.admission`, used by the
operator and ``cjob validate``); the ``crdcheck`` package next to the tests re-exports
it and adds the checks of the CRD manifest itself. This conftest puts this folder on
``sys.path`` so that the test modules can ``import crdcheck`` under
``--import-mode=importlib``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import crdcheck  # noqa: E402

ROOT = HERE.parents[2]
CRD_PATH = ROOT / "crds" / "checkpointedjobs.checkpointed.dev.yaml"
EXAMPLES = ROOT / "examples" / "manifests"
INVALID = HERE / "invalid"


@pytest.fixture(scope="session")
def crd() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(CRD_PATH.read_text())
    return loaded


@pytest.fixture(scope="session")
def schema(crd: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return found


@pytest.fixture(scope="session")
def validator(crd: dict[str, Any]) -> crdcheck.CustomResourceValidator:
    return crdcheck.CustomResourceValidator(crd)


@pytest.fixture
def minimal() -> dict[str, Any]:
    """A fresh copy of examples/manifests/minimal.yaml."""
    loaded: dict[str, Any] = yaml.safe_load((EXAMPLES / "minimal.yaml").read_text())
    return loaded
