"""Fixtures: one kube-local API server (a subprocess) per test session, clients for it.

The server runs with a short watch history (200 events per resource) so that a test
can push a resourceVersion out of it and see 410 Gone.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes as _kubernetes
import pytest
import waiting

kubernetes: Any = _kubernetes  # its partial annotations are not worth fighting in tests

ROOT = Path(__file__).resolve().parents[3]
HISTORY = 200


@dataclasses.dataclass(frozen=True)
class Kube:
    """Where the server is and how to talk to it."""

    state: Path
    url: str

    @property
    def kubeconfig(self) -> Path:
        return self.state / "kubeconfig"

    @property
    def ca(self) -> Path:
        return self.state / "ca.crt"

    @property
    def admin_token(self) -> str:
        return (self.state / "admin-token").read_text().strip()

    def client(self, token: str | None = None, ca: bool = True) -> Any:
        """An ``ApiClient`` with ``token`` (default: the admin's), verifying with the CA."""
        config = kubernetes.client.Configuration()
        config.host = self.url
        config.api_key = {"BearerToken": token or self.admin_token}
        config.api_key_prefix = {"BearerToken": "Bearer"}
        config.verify_ssl = True
        config.ssl_ca_cert = str(self.ca) if ca else None
        return kubernetes.client.ApiClient(config)

    def kubectl(
        self,
        *args: str,
        token: str | None = None,
        check: bool = True,
        stdin: str | None = None,
        kubeconfig: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        if shutil.which("kubectl") is None:
            pytest.skip(
                "kubectl is not installed: install it (e.g. apt-get install kubectl) "
                "to run the kubectl tests against the local API server"
            )
        command = ["kubectl", "--kubeconfig", str(kubeconfig or self.kubeconfig), *args]
        if token is not None:
            command[3:3] = ["--token", token]
        result = subprocess.run(
            command, input=stdin, capture_output=True, text=True, timeout=60, check=False
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
        return result


def start_server(
    state: Path, history: int = HISTORY, kubelet: bool = False
) -> tuple[subprocess.Popen[bytes], str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "devtools" / "kube_local"))
    extra = ["--kubelet"] if kubelet else []
    with (state.parent / f"{state.name}.log").open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kube_local",
                "serve",
                "--state-dir",
                str(state),
                "--history",
                str(history),
                *extra,
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    ready = state / "ready"

    def started() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"kube-local exited with {process.returncode}")
        return ready.exists()

    waiting.wait_until(started, 30, "kube-local to be ready")
    return process, ready.read_text().strip()


@pytest.fixture(scope="session")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    state = tmp_path_factory.mktemp("kube-local") / "state"
    process, url = start_server(state)
    try:
        yield Kube(state, url)
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def core(kube: Kube) -> Any:
    return kubernetes.client.CoreV1Api(kube.client())


@pytest.fixture
def ns(core: Any) -> str:
    """A fresh namespace for one test."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    return name
