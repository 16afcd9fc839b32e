"""The shell scripts CI calls parse, and the helm installer is idempotent."""

from __future__ import annotations

import subprocess

import pytest
from chart_testing import chartkit

SCRIPTS = [
    chartkit.ROOT / "scripts" / "get-helm.sh",
    chartkit.ROOT / "scripts" / "install-test-tools.sh",
    chartkit.ROOT / "scripts" / "minio-image.sh",
    chartkit.ROOT / "scripts" / "try-kubernetes.sh",
]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_parses(script: object) -> None:
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_get_helm_does_nothing_when_helm_is_installed(helm_bin: str) -> None:
    if helm_bin != str(chartkit.ROOT / ".venv" / "bin" / "helm"):
        pytest.skip("helm does not come from .venv/bin here")
    done = subprocess.run(
        ["bash", str(SCRIPTS[0])], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "", "a second run must not download anything"
    version = chartkit.helm("version", "--short")
    assert version.stdout.startswith("v4."), version.stdout
