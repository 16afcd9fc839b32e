"""Steps the operator's integration tests share: start a job running, read what it wrote."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from cjob_operator_testing.harness import OperatorHarness

Manifest = Callable[..., dict[str, Any]]


def start_running(h: OperatorHarness, manifest: Manifest, name: str, **spec: Any) -> dict[str, Any]:
    """Create a job, play the kubelet for its driver, wait for phase Running."""
    h.create_job(manifest(name, **spec))
    pod = h.wait_for(lambda: h.pod(name), f"driver pod of {name}")
    assert pod is not None
    h.set_pod_phase(name, "Running")
    h.wait_for(lambda: h.job_status(name).get("phase") == "Running", f"{name} Running")
    return pod


def job_json(h: OperatorHarness, name: str) -> dict[str, Any]:
    cm = h.find("configmaps", f"{name}-config")
    assert cm is not None
    return dict(json.loads(cm["data"]["job.json"]))


def condition(h: OperatorHarness, name: str, ctype: str) -> dict[str, Any]:
    for cond in h.job_status(name).get("conditions", []):
        if cond["type"] == ctype:
            return dict(cond)
    return {}
