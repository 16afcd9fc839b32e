"""scripts/kube-local.sh without a node (CJOB_KUBE_LOCAL_NODE=none): up prints the export
line and is idempotent, runs the real control plane with the restricted namespaces,
status/env/down work and down leaves no process behind; wrong settings are refused with
one sentence. The real node's own life cycle is tests/integration/kube_local/test_cri_node.py."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import kubernetes as _kubernetes
import waiting
from tests.integration.kube_local.conftest import ROOT

kubernetes: Any = _kubernetes  # its partial annotations are not worth fighting in tests

SCRIPT = ROOT / "scripts" / "kube-local.sh"


def _run(state: Path, *args: str, node: str = "none") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CJOB_KUBE_LOCAL_DIR=str(state), CJOB_KUBE_LOCAL_NODE=node)
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_up_status_env_down(tmp_path: Path) -> None:
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
        status = _run(state, "status").stdout
        assert status.startswith("kube-local: running at https://127.0.0.1:"), status
        assert "node: none" in status
        assert _run(state, "env").stdout == up.stdout
        load = _run(state, "load", "cjob-runtime:dev")
        assert (load.returncode, load.stderr.strip()) == (
            1,
            "kube-local: no node to load images into",
        )
        api = kubernetes.config.new_client_from_config(str(state / "kubeconfig"))
        core = kubernetes.client.CoreV1Api(api)
        spaces = {n.metadata.name: n.metadata.labels for n in core.list_namespace().items}
        assert spaces["streaming"]["pod-security.kubernetes.io/enforce"] == "restricted"
        assert spaces["cjob-system"]["pod-security.kubernetes.io/enforce"] == "restricted"
        waiting.wait_until(
            lambda: core.read_namespaced_service_account("default", "default"), 30, "default SA"
        )
        assert core.list_node().items == []
    finally:
        assert _run(state, "down").returncode == 0
    assert _run(state, "status").returncode == 1
    assert _run(state, "down").returncode == 0
    assert not (state / "kube-local.pid").exists()
    assert not any(Path(f"/proc/{p}").exists() for p in components)


def test_an_unknown_node_kind_is_refused_with_the_choices(tmp_path: Path) -> None:
    up = _run(tmp_path / "kl", "up", node="docker")
    assert up.returncode == 2
    assert "CJOB_KUBE_LOCAL_NODE=docker: use kubelet, none or auto" in up.stderr
