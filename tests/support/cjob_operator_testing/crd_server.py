"""The CheckpointedJob CRD on a real kube-apiserver: what the tests in ``tests/integration/crds``
share (the CRD file, ``kubectl`` with JSON on stdin, reading a stored job, and the causes
of a refusal as ``kubectl`` prints them)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from kube_local import control_plane as control_plane_mod

from cjob_operator_testing import envtest
from cjob_operator_testing.crd_cases import NAMESPACE

ROOT = Path(__file__).resolve().parents[3]
CRD_FILE = ROOT / "crds" / "checkpointedjobs.checkpointed.dev.yaml"
STATUS_TARGET = "status-target"
"""The valid job whose status the status cases patch."""

Plane = control_plane_mod.ControlPlane


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


def kubectl(plane: Plane, *args: str, stdin: Any = None) -> subprocess.CompletedProcess[str]:
    text = None if stdin is None else json.dumps(stdin)
    return envtest.kubectl(plane, *args, stdin=text)


def stored(plane: Plane, name: str) -> dict[str, Any]:
    got = kubectl(plane, "-n", NAMESPACE, "get", "checkpointedjob", name, "-o", "json")
    assert got.returncode == 0, got.stderr
    found: dict[str, Any] = json.loads(got.stdout)
    return found
