"""The local Kubernetes with its real node (``scripts/kube-local.sh``), one per test session.

The machine runs one real node at a time (its kube-proxy owns the host's iptables chains),
so every test that needs one shares this cluster: ``tests/e2e_k8s`` (the user's path) and
``tests/integration/kube_local/test_cri_node.py`` (the node itself), through the root
conftest's session fixture ``local_kubernetes``. :func:`started` brings it up, and on the
way out takes it down and checks that ``down`` left nothing of the node behind: no
process, mount, link or iptables chain (:func:`leftovers`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "kube-local.sh"


class LocalKubeError(AssertionError):
    """``kube-local.sh`` failed; the message carries its output."""


@dataclasses.dataclass(frozen=True)
class LocalKubernetes:
    state: Path

    @property
    def kubeconfig(self) -> Path:
        return self.state / "kubeconfig"

    @property
    def url(self) -> str:
        return (self.state / "ready").read_text().strip()

    @property
    def containerd_socket(self) -> Path:
        return self.state / "node" / "containerd.sock"

    def script(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return run_script(self.state, *args, timeout=timeout)

    def load(self, *images: str) -> None:
        """Import Docker images into the node's containerd (``kube-local.sh load``)."""
        done = self.script("load", *images, timeout=900)
        if done.returncode != 0:
            raise LocalKubeError(f"kube-local.sh load {' '.join(images)}: {done.stderr}")


def run_script(state: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CJOB_KUBE_LOCAL_DIR=str(state), CJOB_KUBE_LOCAL_NODE="kubelet")
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def missing_requirements() -> str:
    """Why the real node cannot run here (``python -m kube_local check``), or ``""``."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "devtools" / "kube_local"))
    check = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-m", "kube_local", "check"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return check.stderr.strip() if check.returncode else ""


@contextlib.contextmanager
def started(state: Path) -> Iterator[LocalKubernetes]:
    up = run_script(state, "up")
    if up.returncode != 0:
        raise LocalKubeError(f"kube-local.sh up failed:\n{up.stderr}")
    if up.stdout.strip() != f"export KUBECONFIG={state}/kubeconfig":
        raise LocalKubeError(f"kube-local.sh up printed {up.stdout!r}")
    try:
        yield LocalKubernetes(state)
    finally:
        down = run_script(state, "down")
    if down.returncode != 0:
        raise LocalKubeError(f"kube-local.sh down failed:\n{down.stderr}")
    left = leftovers(state)
    if left:
        raise LocalKubeError("kube-local.sh down left behind: " + "; ".join(left))


def _lines(*argv: str) -> list[str]:
    done = subprocess.run(list(argv), capture_output=True, text=True, check=False)
    return done.stdout.splitlines()


def leftovers(state: Path) -> list[str]:
    """What of the node in ``state`` is still on the machine (empty after a clean down)."""
    node_dir = str(state / "node")
    left = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if node_dir.encode() in cmdline:
            shown = cmdline.replace(b"\0", b" ")[:120].decode(errors="replace")
            left.append(f"process {entry.name}: {shown}")
    left += [
        f"mount {line.split()[1]}" for line in _lines("cat", "/proc/mounts") if node_dir in line
    ]
    left += [f"link {line.split()[1]}" for line in _lines("ip", "-o", "link") if "cjob0" in line]
    for table in ("filter", "nat"):
        rules = _lines("iptables", "-t", table, "-S")
        left += [f"{table}: {r}" for r in rules if "KUBE-" in r or "cjob-kube-local" in r]
    return left
