"""Real-cluster end to end (kind/k3d + Helm): runs ``tests/e2e_cluster/run.sh``.

Skipped, with the reason, when ``kubectl`` or ``helm`` is missing or no cluster is
reachable through the current kubeconfig context. What the script checks is listed at
its top; images and the pipeline module come from ``CJOB_*`` environment variables.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SCRIPT = HERE / "run.sh"


def _helm() -> str | None:
    local = Path(sys.executable).parent / "helm"
    return str(local) if local.is_file() else shutil.which("helm")


def _cluster_unreachable_reason() -> str | None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return "kubectl is not installed"
    if _helm() is None:
        return "helm is not installed (run scripts/get-helm.sh)"
    if os.environ.get("CJOB_E2E_CREATE_CLUSTER"):
        return None  # the script creates one
    try:
        done = subprocess.run([kubectl, "version", "--request-timeout=5s"],
                              capture_output=True, text=True, timeout=20, check=False)
    except subprocess.TimeoutExpired:
        return "no Kubernetes cluster reachable (kubectl version timed out)"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return (f"no Kubernetes cluster reachable through the current kubeconfig ({last}); "
                "start one (kind create cluster / k3d cluster create) or set "
                "CJOB_E2E_CREATE_CLUSTER=kind|k3d, then run tests/e2e_cluster/run.sh")
    return None


@pytest.mark.timeout(1800)
def test_helm_install_job_checkpoints_and_recovers_on_a_real_cluster() -> None:
    reason = _cluster_unreachable_reason()
    if reason is not None:
        pytest.skip(reason)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "CJOB_E2E_REQUIRE_CLUSTER": "1"}
    done = subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=1700, check=False)
    assert done.returncode == 0, f"{done.stdout[-4000:]}\n{done.stderr[-8000:]}"
    assert "PASSED:" in done.stdout
