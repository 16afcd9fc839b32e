"""Real-cluster end to end (kind/k3d + Helm).

Two tests, each skipped with the reason when ``kubectl`` or ``helm`` is missing or no
cluster is reachable through the current kubeconfig context:

* the scenario of ``tests/e2e_k8s`` (the same steps, module :mod:`scenario`), with
  containers killed through ``kubectl exec`` instead of the local Docker engine; it
  needs an S3 server the cluster reaches as ``CJOB_E2E_S3_ENDPOINT`` (e.g.
  ``http://minio.minio.svc:9000``) and this process reaches as
  ``CJOB_E2E_S3_HOST_ENDPOINT`` (e.g. through ``kubectl port-forward``), with keys in
  ``CJOB_E2E_S3_ACCESS_KEY`` / ``CJOB_E2E_S3_SECRET_KEY``, and the images in
  ``CJOB_OPERATOR_IMAGE`` / ``CJOB_RUNTIME_IMAGE``;
* ``tests/e2e_cluster/run.sh``: a namespaced install with the chart's evaluation MinIO
  under the restricted Pod Security Standard, a driver kill, metrics, suspend/resume.
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
SCENARIO = ROOT / "tests" / "e2e_k8s"
S3_SETTINGS = (
    "CJOB_E2E_S3_ENDPOINT",
    "CJOB_E2E_S3_HOST_ENDPOINT",
    "CJOB_E2E_S3_ACCESS_KEY",
    "CJOB_E2E_S3_SECRET_KEY",
)


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
        done = subprocess.run(
            [kubectl, "version", "--request-timeout=5s"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "no Kubernetes cluster reachable (kubectl version timed out)"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return (
            f"no Kubernetes cluster reachable through the current kubeconfig ({last}); "
            "start one (kind create cluster / k3d cluster create) or set "
            "CJOB_E2E_CREATE_CLUSTER=kind|k3d, then run tests/e2e_cluster/run.sh"
        )
    return None


@pytest.mark.timeout(1800)
def test_helm_install_job_checkpoints_and_recovers_on_a_real_cluster() -> None:
    reason = _cluster_unreachable_reason()
    if reason is not None:
        pytest.skip(reason)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "CJOB_E2E_REQUIRE_CLUSTER": "1",
    }
    done = subprocess.run(
        ["bash", str(SCRIPT)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1700,
        check=False,
    )
    assert done.returncode == 0, f"{done.stdout[-4000:]}\n{done.stderr[-8000:]}"
    assert "PASSED:" in done.stdout


@pytest.mark.timeout(1800)
def test_the_local_kubernetes_scenario_on_a_real_cluster(monkeypatch, capsys) -> None:
    reason = _cluster_unreachable_reason()
    if reason is not None:
        pytest.skip(reason)
    missing = [name for name in S3_SETTINGS if not os.environ.get(name)]
    if missing:
        pytest.skip(
            f"set {', '.join(missing)} (an S3 server the cluster and this process "
            "reach) to run the scenario on this cluster"
        )
    sys.path.insert(0, str(SCENARIO))
    import cluster as cluster_mod
    import scenario

    settings = scenario.Settings(
        namespace="cjob-e2e-jobs",
        operator_namespace="cjob-e2e-system",
        release="cjob-e2e",
        runtime_image=os.environ.get(
            "CJOB_RUNTIME_IMAGE", "ghcr.io/checkpointed-jobs/cjob-runtime:0.1.0"
        ),
        storage_endpoint=os.environ["CJOB_E2E_S3_ENDPOINT"],
        step_timeout=300.0,
    )
    kubeconfig = Path(os.environ.get("KUBECONFIG", Path.home() / ".kube" / "config"))
    cl = cluster_mod.Cluster(kubeconfig=kubeconfig, helm=_helm() or "helm")
    access, secret = os.environ["CJOB_E2E_S3_ACCESS_KEY"], os.environ["CJOB_E2E_S3_SECRET_KEY"]
    for ns in (settings.namespace, settings.operator_namespace):
        cl.kubectl_run("create", "namespace", ns)
    try:
        cl.kubectl_run(
            "-n",
            settings.namespace,
            "create",
            "secret",
            "generic",
            settings.credentials_secret,
            f"--from-literal=AWS_ACCESS_KEY_ID={access}",
            f"--from-literal=AWS_SECRET_ACCESS_KEY={secret}",
        )
        operator_image = os.environ.get(
            "CJOB_OPERATOR_IMAGE", "ghcr.io/checkpointed-jobs/cjob-operator:0.1.0"
        )
        repository, tag = operator_image.rsplit(":", 1)
        run = scenario.Scenario(cl, cluster_mod.ExecKiller(), settings)
        summary = run.run({"image.repository": repository, "image.tag": tag})
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", access)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
        summary |= scenario.check_output(settings, os.environ["CJOB_E2E_S3_HOST_ENDPOINT"])
        with capsys.disabled():
            print(f"\n{scenario.summary_line(summary)}", flush=True)
        assert (summary["lost"], summary["duplicated"], summary["out_of_order"]) == (0, 0, 0)
        assert summary["left_after_uninstall"] == []
    finally:
        for ns in (settings.namespace, settings.operator_namespace):
            cl.run("kubectl", "delete", "namespace", ns, "--wait=false")
