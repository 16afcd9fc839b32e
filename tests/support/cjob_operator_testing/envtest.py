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
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml
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


# -- what a harness installs: the CRD, namespaces, the chart's RBAC, a ServiceAccount's token


def wait_established(
    plane: control_plane_mod.ControlPlane, crd: str, timeout: float = 60.0
) -> None:
    """Wait until CRD ``crd`` is Established. Polled, not ``kubectl wait``: right after an
    apply the CRD may have no conditions yet, and ``kubectl wait`` then fails at once
    ("accessor error: <nil>") instead of waiting."""
    query = 'jsonpath={.status.conditions[?(@.type=="Established")].status}'
    deadline = time.monotonic() + timeout
    while kubectl(plane, "get", f"crd/{crd}", "-o", query).stdout != "True":
        assert time.monotonic() < deadline, f"crd/{crd} never Established"
        time.sleep(0.2)


def install_crd(plane: control_plane_mod.ControlPlane, crd: dict[str, Any]) -> None:
    """Apply ``crd`` as the admin; return once its resource is served."""
    done = kubectl(
        plane, "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=yaml.safe_dump(crd)
    )
    if done.returncode != 0:
        raise RuntimeError(f"the API server refused the CRD: {done.stderr}")
    name = crd["metadata"]["name"]
    wait_established(plane, name)
    # Established is not yet served: the first requests may get 429 "storage is
    # (re)initializing" until the resource's storage is ready
    resource = f"{crd['spec']['names']['plural']}.{crd['spec']['group']}"
    deadline = time.monotonic() + 60
    while kubectl(plane, "get", resource, "-A").returncode != 0:
        assert time.monotonic() < deadline, f"{resource} never served"
        time.sleep(0.2)


def apply(plane: control_plane_mod.ControlPlane, docs: Sequence[dict[str, Any]]) -> None:
    """``kubectl apply`` the objects as the admin."""
    done = kubectl(plane, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
    assert done.returncode == 0, done.stderr


def chart_rbac(release: str, namespace: str, *sets: str) -> list[dict[str, Any]]:
    """The chart's ServiceAccounts, Roles, ClusterRoles and bindings (``helm template``)."""
    helm = shutil.which("helm") or str(ROOT / ".venv" / "bin" / "helm")
    out = subprocess.run(
        [
            helm,
            "template",
            release,
            str(ROOT / "charts" / "checkpointed-operator"),
            f"--namespace={namespace}",
            "--show-only=templates/serviceaccount.yaml",
            "--show-only=templates/rbac-operator.yaml",
            "--show-only=templates/rbac-driver.yaml",
            *(f"--set={s}" for s in sets),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def service_account_token(
    plane: control_plane_mod.ControlPlane, namespace: str, account: str, seconds: int = 7200
) -> str:
    """A token of ``namespace/account`` from the TokenRequest API (as ``kubectl create token``)."""
    done = kubectl(plane, "create", "token", account, "-n", namespace, f"--duration={seconds}s")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
