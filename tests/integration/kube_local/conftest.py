"""Fixtures: one kube-local API server (a subprocess) per test session, clients for it.

The server runs with a short watch history (200 events per resource) so that a test
can push a resourceVersion out of it and see 410 Gone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
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


@contextlib.contextmanager
def running_server(state: Path) -> Iterator[Kube]:
    """A kube-local server keeping its state in ``state``, stopped on exit."""
    process, url = start_server(state)
    try:
        yield Kube(state, url)
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    with running_server(tmp_path_factory.mktemp("kube-local") / "state") as kube:
        yield kube


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@contextlib.contextmanager
def running_operator(kube: Kube, namespace: str, log: Path, **env: str) -> Iterator[Path]:
    """The real operator (``kopf run -m cjob_operator.main``) watching ``namespace`` on
    ``kube``, with the CRD and the namespace applied first; yields its log once it watches.
    ``env``: more of its environment (``CJOB_METRICS_PORT`` is required)."""
    kube.kubectl("apply", "-f", str(ROOT / "crds" / "checkpointedjobs.checkpointed.dev.yaml"))
    kube.kubectl(
        "apply",
        "-f",
        "-",
        stdin=f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n",
    )
    environment = dict(
        os.environ,
        KUBECONFIG=str(kube.kubeconfig),
        CJOB_METRICS_HOST="127.0.0.1",
        PYTHONUNBUFFERED="1",
        **env,
    )
    command = [sys.executable, "-m", "kopf", "run", "--standalone", "--verbose"]
    command += [f"--namespace={namespace}", "-m", "cjob_operator.main"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, env=environment, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        ready = f"http://127.0.0.1:{env['CJOB_METRICS_PORT']}/readyz"
        waiting.wait_until(lambda: _answers(ready), 30, "the operator")
        waiting.wait_until(
            lambda: b"Starting the watch-stream for checkpointedjobs" in log.read_bytes(),
            30,
            "the operator to watch",
        )
        yield log
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@pytest.fixture
def core(kube: Kube) -> Any:
    return kubernetes.client.CoreV1Api(kube.client())


@pytest.fixture
def ns(core: Any) -> str:
    """A fresh namespace for one test."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    return name
