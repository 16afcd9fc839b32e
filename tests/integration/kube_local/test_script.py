"""scripts/kube-local.sh: up prints the export line, is idempotent, runs the real control
plane and the node, status and down work, down leaves no process or container behind."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import kubernetes as _kubernetes
import waiting
from tests.integration.kube_local.conftest import POD_CIDR, ROOT, bin_dir, docker_ready

kubernetes: Any = _kubernetes  # its partial annotations are not worth fighting in tests

SCRIPT = ROOT / "scripts" / "kube-local.sh"


def _run(state: Path, command: str) -> subprocess.CompletedProcess[str]:
    env = dict(
        os.environ,
        CJOB_KUBE_LOCAL_DIR=str(state),
        CJOB_KUBE_LOCAL_POD_CIDR=POD_CIDR,
        CJOB_KUBE_LOCAL_NODE="agent",
    )
    return subprocess.run(
        ["bash", str(SCRIPT), command],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _containers(uid: str) -> list[str]:
    listed = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=io.kubernetes.pod.uid={uid}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return listed.stdout.split()


def test_up_status_env_down(tmp_path: Path) -> None:
    docker_ready()
    state = tmp_path / "kl"
    try:
        up = _run(state, "up")
        assert up.returncode == 0, up.stderr
        assert up.stdout.strip() == f"export KUBECONFIG={state}/kubeconfig"
        pid = (state / "kube-local.pid").read_text().strip()
        components = (state / "components.pid").read_text().split()
        assert len(components) == 4  # etcd, apiserver, controller-manager, scheduler
        again = _run(state, "up")
        assert again.stdout == up.stdout
        assert (state / "kube-local.pid").read_text().strip() == pid
        assert _run(state, "status").stdout.startswith("kube-local: running at https://")
        assert _run(state, "env").stdout == up.stdout
        api = kubernetes.config.new_client_from_config(str(state / "kubeconfig"))
        core = kubernetes.client.CoreV1Api(api)
        spaces = {n.metadata.name: n.metadata.labels for n in core.list_namespace().items}
        assert spaces["streaming"]["pod-security.kubernetes.io/enforce"] == "restricted"
        assert spaces["cjob-system"]["pod-security.kubernetes.io/enforce"] == "restricted"
        waiting.wait_until(
            lambda: core.read_namespaced_service_account("default", "default"), 30, "default SA"
        )
        pod = core.create_namespaced_pod(
            "default",
            {
                "metadata": {"name": "sleeper"},
                "spec": {
                    "containers": [
                        {"name": "main", "image": "cjob-base:bookworm", "command": ["sleep", "300"]}
                    ]
                },
            },
        )
        waiting.wait_until(lambda: _containers(pod.metadata.uid), 60, "the pod's container")
        minio = ROOT / "devtools" / "kube_local" / "manifests" / "minio.yaml"
        kubectl = [str(bin_dir() / "kubectl"), "--kubeconfig", str(state / "kubeconfig")]
        applied = subprocess.run(
            [*kubectl, "apply", "-f", str(minio)], capture_output=True, text=True, check=False
        )
        assert applied.returncode == 0, applied.stderr  # no loopback Endpoints: refused
    finally:
        assert _run(state, "down").returncode == 0
    assert _run(state, "status").returncode == 1
    assert _run(state, "down").returncode == 0
    assert not (state / "kube-local.pid").exists()
    assert _containers(pod.metadata.uid) == []
    assert not any(Path(f"/proc/{p}").exists() for p in components)
