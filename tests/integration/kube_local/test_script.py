"""scripts/kube-local.sh: up prints the export line, is idempotent, status and down work."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import kubernetes as _kubernetes
from tests.integration.kube_local.conftest import ROOT

kubernetes: Any = _kubernetes  # its partial annotations are not worth fighting in tests

SCRIPT = ROOT / "scripts" / "kube-local.sh"


def _run(state: Path, command: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CJOB_KUBE_LOCAL_DIR=str(state))
    return subprocess.run(
        ["bash", str(SCRIPT), command],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_up_status_env_down(tmp_path: Path) -> None:
    state = tmp_path / "kl"
    try:
        up = _run(state, "up")
        assert up.returncode == 0, up.stderr
        assert up.stdout.strip() == f"export KUBECONFIG={state}/kubeconfig"
        pid = (state / "kube-local.pid").read_text().strip()
        again = _run(state, "up")
        assert again.stdout == up.stdout
        assert (state / "kube-local.pid").read_text().strip() == pid
        assert _run(state, "status").stdout.startswith("kube-local: running at https://")
        assert _run(state, "env").stdout == up.stdout
        api = kubernetes.config.new_client_from_config(str(state / "kubeconfig"))
        names = [n.metadata.name for n in kubernetes.client.CoreV1Api(api).list_namespace().items]
        assert names == ["default", "kube-public", "kube-system"]
    finally:
        assert _run(state, "down").returncode == 0
    assert _run(state, "status").returncode == 1
    assert _run(state, "down").returncode == 0
    assert not (state / "kube-local.pid").exists()
