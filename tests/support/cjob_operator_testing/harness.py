"""Run the real operator (``kopf run -m cjob_operator.main``) against a real control plane.

etcd, kube-apiserver and kube-controller-manager (:mod:`.envtest`; the controllers
make garbage collection, ServiceAccounts and namespace deletion real), the CRD as the
operator's tests judge jobs by it (:mod:`.local_store_crd`), the chart's RBAC
(``helm template``), and the operator as a subprocess holding the chart's
ServiceAccount's token (TokenRequest), not the admin's certificate. The harness plays
the scheduler and the node (:mod:`.node`); the driver's control API is the
:class:`FakeDriver` (or, with ``local_pods``, pods run as local processes:
:mod:`.kubelet`).

>>> # with OperatorHarness(tmp_path) as h:
>>> #     h.create_job(manifest)
>>> #     h.wait_for(lambda: h.pod("job"), "driver pod")
"""

from __future__ import annotations

import contextlib
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

import waiting
from aiohttp import web
from kube_local import certs

from cjob_operator import admission
from cjob_operator_testing import envtest, kubelet
from cjob_operator_testing.fake_driver import FakeDriver
from cjob_operator_testing.kube_api import Api, Credentials
from cjob_operator_testing.local_store_crd import local_store_crd, write_local_store_crd
from cjob_operator_testing.loop import LoopThread, free_port
from cjob_operator_testing.node import Node

T = TypeVar("T")
OPERATOR_NAMESPACE = "cjob-system"
RELEASE = "cjob"
Docs = list[dict[str, Any]]


class ConditionTimeout(AssertionError):
    pass


def chart_rbac(namespace: str) -> Docs:
    """The chart's RBAC for an operator in :data:`OPERATOR_NAMESPACE` watching every
    namespace (the chart's default) and drivers in ``namespace``."""
    return envtest.chart_rbac(RELEASE, OPERATOR_NAMESPACE, f"driver.namespaces={{{namespace}}}")


class OperatorHarness:
    """A real control plane, the node and the fake driver on a background loop, the
    operator as a subprocess with the chart's RBAC."""

    def __init__(
        self,
        workdir: Path,
        namespace: str = "jobs",
        tick: float = 0.3,
        extra_env: dict[str, str] | None = None,
        local_pods: bool = False,
        command_map: Callable[[list[str]], list[str]] | None = None,
        crd: dict[str, Any] | None = None,
        rbac: Callable[[Docs], Docs] | None = None,
    ) -> None:
        """``local_pods``: run pods as local processes (:mod:`.kubelet`) instead of
        answering for them with the in-process :class:`FakeDriver`. ``crd``: what to
        install instead of :func:`local_store_crd`. ``rbac``: changes the chart's RBAC
        objects before they are applied (the RBAC tests take rules away)."""
        self.workdir = workdir
        self.namespace = namespace
        self.tick = tick
        self.extra_env = extra_env or {}
        self.loop = LoopThread()
        self.crd = crd
        self.rbac = rbac or (lambda docs: docs)
        self.local_pods = local_pods
        self.command_map = command_map or kubelet.standin_command
        self.api_url = ""
        self.driver_url = ""
        self.metrics_url = ""
        self.log_path = workdir / "operator.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._runner: web.AppRunner | None = None
        self._stack = contextlib.ExitStack()
        self.kubelet: kubelet.LocalKubelet | None = None

    # -- lifecycle -------------------------------------------------------------------

    def __enter__(self) -> OperatorHarness:
        try:
            self.plane = self._stack.enter_context(envtest.control_plane(self.workdir / "plane"))
            self.api_url = self.plane.url
            self.admin = Api(Credentials.of_client(self.api_url, self.plane.authority, certs.ADMIN))
            self._install()
            self.node: Node = (
                kubelet.LocalKubelet(self.plane, self.workdir / "pods", self.command_map)
                if self.local_pods
                else Node(self.plane)
            )
            if isinstance(self.node, kubelet.LocalKubelet):
                self.kubelet = self.node
            self.driver = FakeDriver(self.node)
            self.loop.run(self._start_servers())
            self._start_operator()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop_operator()
        with contextlib.suppress(Exception):
            self.loop.run(self._stop_servers())
        self.loop.close()
        self._stack.close()

    def _install(self) -> None:
        crd = self.crd if self.crd is not None else local_store_crd()
        envtest.install_crd(self.plane, crd)
        restricted = {f"pod-security.kubernetes.io/{m}": "restricted" for m in ("enforce", "warn")}
        envtest.apply(
            self.plane,
            [
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": name, "labels": restricted},
                }
                for name in (self.namespace, OPERATOR_NAMESPACE)
            ],
        )
        self.rbac_docs = self.rbac(chart_rbac(self.namespace))
        envtest.apply(self.plane, self.rbac_docs)
        self._write_kubeconfig()

    async def _start_servers(self) -> None:
        await self.node.start()
        app = self.kubelet.proxy_app() if self.kubelet is not None else self.driver.app
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        port = free_port()
        await web.TCPSite(self._runner, "127.0.0.1", port).start()
        self.driver_url = f"http://127.0.0.1:{port}"

    async def _stop_servers(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        await self.node.stop()

    def _write_kubeconfig(self) -> None:
        """The operator's kubeconfig: the chart's ServiceAccount, by a TokenRequest token."""
        account = next(
            d["metadata"]["name"]
            for d in chart_rbac(self.namespace)
            if d["kind"] == "ServiceAccount" and d["metadata"]["namespace"] == OPERATOR_NAMESPACE
        )
        token = envtest.service_account_token(self.plane, OPERATOR_NAMESPACE, account)
        credentials = Credentials(self.api_url, self.plane.authority.path("ca.crt"), token=token)
        self.kubeconfig = self.workdir / "operator.kubeconfig"
        self.kubeconfig.write_text(json.dumps(credentials.kubeconfig(self.namespace)))

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
            "--all-namespaces",
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
        """A request to the API server as the admin."""
        return self.admin.http(method, path, body, content_type)

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
        """Call ``fn`` on the harness's loop (where the node and the fake driver live)."""

        async def call() -> T:
            return fn(*args)

        return self.loop.run(call())

    def _collection(self, plural: str) -> str:
        if plural == "checkpointedjobs":
            return self.jobs_path()
        return f"/api/v1/namespaces/{self.namespace}/{plural}"

    def find(self, plural: str, name: str) -> dict[str, Any] | None:
        return self.admin.get(f"{self._collection(plural)}/{name}")

    def all(self, plural: str) -> list[dict[str, Any]]:
        return self.admin.items(self._collection(plural))

    def job(self, name: str) -> dict[str, Any] | None:
        return self.find("checkpointedjobs", name)

    def job_status(self, name: str) -> dict[str, Any]:
        return dict((self.job(name) or {}).get("status") or {})

    def pod(self, name: str) -> dict[str, Any] | None:
        return self.find("pods", f"{name}-driver")

    def set_pod_phase(self, name: str, phase: str, exit_code: int | None = None) -> None:
        """Play the kubelet: report the driver pod's phase through ``pods/status``."""
        assert self.loop.run(
            self.node.set_pod_phase(self.namespace, f"{name}-driver", phase, exit_code)
        )

    def events(self, name: str) -> list[dict[str, Any]]:
        path = self._collection("events") + f"?fieldSelector=involvedObject.name%3D{name}"
        return self.admin.items(path)

    def event_reasons(self, name: str) -> list[str]:
        return [str(e.get("reason")) for e in self.events(name)]
