"""Run the real operator (``kopf run -m cjob_operator.main``) against the fakes.

>>> # with OperatorHarness(tmp_path) as h:
>>> #     h.create_job(manifest)
>>> #     h.wait_for(lambda: h.kube.find("pods", h.namespace, "job-driver"), "driver pod")
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import kmock
import waiting
from aiohttp import web

from cjob_operator import admission
from cjob_operator_testing import kubelet
from cjob_operator_testing.fake_driver import FakeDriver
from cjob_operator_testing.fake_kube import FakeKubernetes
from cjob_operator_testing.local_store_crd import write_local_store_crd
from cjob_operator_testing.loop import LoopThread, free_port

T = TypeVar("T")


class ConditionTimeout(AssertionError):
    pass


class OperatorHarness:
    """Fake API server + fake driver on a background loop, the operator as a subprocess."""

    def __init__(
        self,
        workdir: Path,
        namespace: str = "jobs",
        tick: float = 0.3,
        extra_env: dict[str, str] | None = None,
        local_pods: bool = False,
        command_map: Callable[[list[str]], list[str]] | None = None,
    ) -> None:
        """``local_pods``: run pods as local processes (:mod:`.kubelet`) instead of
        answering for them with the in-process :class:`FakeDriver`."""
        self.workdir = workdir
        self.namespace = namespace
        self.tick = tick
        self.extra_env = extra_env or {}
        self.loop = LoopThread()
        self.kube = FakeKubernetes()
        self.driver = FakeDriver(self.kube)
        self.api_url = ""
        self.driver_url = ""
        self.metrics_url = ""
        self.log_path = workdir / "operator.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._server: kmock.Server | None = None
        self._runner: web.AppRunner | None = None
        self.kubelet: kubelet.LocalKubelet | None = None
        if local_pods:
            self.kubelet = kubelet.LocalKubelet(
                self.kube, workdir / "pods", command_map or kubelet.standin_command
            )

    # -- lifecycle -------------------------------------------------------------------

    def __enter__(self) -> OperatorHarness:
        self.loop.run(self._start_servers())
        self._write_kubeconfig()
        self._start_operator()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop_operator()
        self.loop.run(self._stop_servers())
        self.loop.close()

    async def _start_servers(self) -> None:
        await self.kube.__aenter__()
        self._server = kmock.Server(self.kube)
        await self._server.__aenter__()
        self.api_url = str(self._server.url).rstrip("/")
        if self.kubelet is not None:
            self.kubelet.start()
        app = self.kubelet.proxy_app() if self.kubelet is not None else self.driver.app
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        port = free_port()
        await web.TCPSite(self._runner, "127.0.0.1", port).start()
        self.driver_url = f"http://127.0.0.1:{port}"
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
        async with self._server.client.post("/api/v1/namespaces", json=ns) as resp:
            assert resp.status == 201, await resp.text()

    async def _stop_servers(self) -> None:
        if self.kubelet is not None:
            await self.kubelet.stop()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._server is not None:
            await self._server.__aexit__(None, None, None)
        await self.kube.__aexit__(None, None, None)

    def _write_kubeconfig(self) -> None:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": self.api_url}}],
            "users": [{"name": "fake", "user": {"token": "fake-token"}}],
            "contexts": [
                {
                    "name": "fake",
                    "context": {"cluster": "fake", "user": "fake", "namespace": self.namespace},
                }
            ],
        }
        self.kubeconfig = self.workdir / "kubeconfig.json"
        self.kubeconfig.write_text(json.dumps(config))

    def _start_operator(self) -> None:
        metrics_port = free_port()
        self.metrics_url = f"http://127.0.0.1:{metrics_port}"
        env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            admission.CRD_FILE_ENV: str(write_local_store_crd(self.workdir / "crd.yaml")),
            "CJOB_RECONCILE_INTERVAL": str(self.tick),
            "CJOB_CONTROL_URL_TEMPLATE": self.driver_url + "/jobs/{namespace}/{name}",
            "CJOB_METRICS_PORT": str(metrics_port),
            "CJOB_METRICS_HOST": "127.0.0.1",
            "PYTHONUNBUFFERED": "1",
            **self.extra_env,
        }
        cmd = [
            sys.executable,
            "-m",
            "kopf",
            "run",
            "--standalone",
            "--verbose",
            f"--namespace={self.namespace}",
            "-m",
            "cjob_operator.main",
        ]
        log = self.log_path.open("ab")
        self._process = subprocess.Popen(
            cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.wait_for(
            lambda: self._http_ok(self.metrics_url + "/readyz"), "operator ready", timeout=30
        )

    def stop_operator(self) -> None:
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        self._process = None

    def restart_operator(self) -> None:
        self.stop_operator()
        self._start_operator()

    # -- helpers -------------------------------------------------------------------

    @staticmethod
    def _http_ok(url: str) -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def http(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.api_url + path, data=data, method=method, headers={"Content-Type": content_type}
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"null")

    def operator_log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_for(
        self, predicate: Callable[[], T], what: str, timeout: float = 20.0, interval: float = 0.05
    ) -> T:
        def ready() -> T | None:
            result = predicate()
            if not result and self._process is not None and self._process.poll() is not None:
                raise ConditionTimeout(
                    f"operator exited while waiting for {what}:\n" + self.operator_log()[-4000:]
                )
            return result

        return waiting.wait_until(
            ready,
            timeout,
            what,
            interval=interval,
            explain=lambda: "operator log tail:\n" + self.operator_log()[-4000:],
        )

    def scrape_metrics(self) -> str:
        with urllib.request.urlopen(self.metrics_url + "/metrics", timeout=5) as resp:
            return str(resp.read().decode())

    # -- the job API, as kubectl would use it ---------------------------------------

    def jobs_path(self, name: str | None = None, sub: str | None = None) -> str:
        path = f"/apis/checkpointed.dev/v1alpha1/namespaces/{self.namespace}/checkpointedjobs"
        return path + (f"/{name}" if name else "") + (f"/{sub}" if sub else "")

    def create_job(self, manifest: dict[str, Any]) -> dict[str, Any]:
        status, body = self.http("POST", self.jobs_path(), manifest)
        assert status == 201, body
        return dict(body)

    def patch_spec(self, name: str, spec_patch: dict[str, Any]) -> None:
        status, body = self.http(
            "PATCH", self.jobs_path(name), {"spec": spec_patch}, "application/merge-patch+json"
        )
        assert status == 200, body

    def delete_job(self, name: str) -> None:
        status, body = self.http("DELETE", self.jobs_path(name))
        assert status == 200, body

    def on_loop(self, fn: Callable[..., T], *args: Any) -> T:
        """Call ``fn`` on the servers' loop (where the fake's objects change)."""

        async def call() -> T:
            return fn(*args)

        return self.loop.run(call())

    def find(self, plural: str, name: str) -> dict[str, Any] | None:
        return self.on_loop(self.kube.find, plural, self.namespace, name)

    def all(self, plural: str) -> list[dict[str, Any]]:
        return self.on_loop(self.kube.all, plural, self.namespace)

    def job(self, name: str) -> dict[str, Any] | None:
        return self.find("checkpointedjobs", name)

    def job_status(self, name: str) -> dict[str, Any]:
        return dict((self.job(name) or {}).get("status") or {})

    def pod(self, name: str) -> dict[str, Any] | None:
        return self.find("pods", f"{name}-driver")

    def set_pod_phase(self, name: str, phase: str, exit_code: int | None = None) -> None:
        assert self.loop.run(
            self.kube.set_pod_phase(self.namespace, f"{name}-driver", phase, exit_code)
        )

    def events(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.all("events") if e.get("involvedObject", {}).get("name") == name]

    def event_reasons(self, name: str) -> list[str]:
        return [str(e.get("reason")) for e in self.events(name)]
