"""Fixtures: kube-local (the real control plane) as a subprocess (``python -m kube_local
serve``), clients for it, the real operator against it, and the images of the node.

``running_server``/``running_operator`` are used by other test packages too
(``tests/integration/cjob_operator/test_operator_invalid_specs.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes as _kubernetes
import pytest
import waiting
from kube_local import control_plane

kubernetes: Any = _kubernetes  # its partial annotations are not worth fighting in tests

ROOT = Path(__file__).resolve().parents[3]


@functools.cache
def bin_dir() -> Path:
    """The Kubernetes binaries (built once per machine by ``scripts/kube-build.sh``)."""
    return control_plane.build(ROOT)


RUNTIME = "cjob-runtime:dev"


def docker_ready() -> bool:
    """Make sure an engine answers and has the images; ``True`` when it had to start one."""
    from docker_testing import docker_harness

    docker_harness.require_docker()
    answers = subprocess.run(["docker", "info"], capture_output=True, check=False)
    present = subprocess.run(
        ["docker", "image", "inspect", RUNTIME], capture_output=True, check=False
    )
    if answers.returncode != 0 or present.returncode != 0:  # starts the engine, keeps it
        subprocess.run(
            ["bash", "scripts/docker-smoke.sh", "--build-only"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            timeout=1800,
        )
    return answers.returncode != 0


@dataclasses.dataclass(frozen=True)
class Kube:
    """Where the cluster is and how to talk to it (as its admin, group system:masters)."""

    state: Path
    url: str

    @property
    def kubeconfig(self) -> Path:
        return self.state / "kubeconfig"

    @property
    def ca(self) -> Path:
        return self.state / "pki" / "ca.crt"

    def client(self) -> Any:
        """An ``ApiClient`` from the admin's kubeconfig."""
        return kubernetes.config.new_client_from_config(str(self.kubeconfig))

    def kubectl(
        self,
        *args: str,
        check: bool = True,
        stdin: str | None = None,
        kubeconfig: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """kubectl of the same build as the API server."""
        command = [str(bin_dir() / "kubectl"), "--kubeconfig", str(kubeconfig or self.kubeconfig)]
        result = subprocess.run(
            [*command, *args], input=stdin, capture_output=True, text=True, timeout=60, check=False
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
        return result


def start_server(state: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``python -m kube_local serve`` without a node; its URL once ``STATE/ready`` exists."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "devtools" / "kube_local"))
    state.mkdir(parents=True, exist_ok=True)
    with (state.parent / f"{state.name}.log").open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kube_local",
                "serve",
                "--state-dir",
                str(state),
                "--bin-dir",
                str(bin_dir()),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    ready = state / "ready"

    def started() -> bool:
        if process.poll() is not None:
            tail = (state.parent / f"{state.name}.log").read_text(errors="replace")[-2000:]
            raise AssertionError(f"kube-local exited with {process.returncode}: {tail}")
        return ready.exists()

    waiting.wait_until(started, 120, "kube-local to be ready")
    return process, ready.read_text().strip()


def stop_server(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
        raise


@contextlib.contextmanager
def running_server(state: Path) -> Iterator[Kube]:
    """kube-local keeping its state in ``state``, stopped on exit."""
    process, url = start_server(state)
    try:
        yield Kube(state, url)
    finally:
        stop_server(process)


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
