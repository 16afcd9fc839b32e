"""A real Kubernetes API server for tests, as controller-runtime's envtest gives Go operators.

:func:`control_plane` starts etcd and kube-apiserver (and, unless told otherwise,
kube-controller-manager for garbage collection, ServiceAccounts and the other
controllers) from the binaries ``scripts/kube-build.sh`` builds and caches, in a state
directory of the caller's; it stops them on exit. The root ``tests/conftest.py`` offers
one per session as the ``kube_api`` fixture.

>>> # with control_plane(tmp_path) as plane:
>>> #     kubectl(plane, "apply", "-f", "crds/checkpointedjobs.checkpointed.dev.yaml")
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

from kube_local import control_plane as control_plane_mod

ROOT = Path(__file__).resolve().parents[3]
WITH_CONTROLLERS = ("etcd", "kube-apiserver", "kube-controller-manager")


def binaries() -> Path:
    """The directory of the built binaries (building what is missing, once per machine)."""
    return control_plane_mod.build(ROOT, (*control_plane_mod.ALL, "kubectl"))


@contextlib.contextmanager
def control_plane(
    state: Path, components: Sequence[str] = WITH_CONTROLLERS
) -> Iterator[control_plane_mod.ControlPlane]:
    plane = control_plane_mod.ControlPlane(state, binaries(), components)
    with plane:
        yield plane


def kubectl(
    plane: control_plane_mod.ControlPlane, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``kubectl`` of the same release as the server, as the admin; never raises on exit codes."""
    return subprocess.run(
        [str(plane.bin / "kubectl"), f"--kubeconfig={plane.kubeconfig}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "KUBECONFIG": str(plane.kubeconfig)},
    )
