"""A local control plane of real binaries: etcd, kube-apiserver, and optionally
kube-controller-manager and kube-scheduler, as child processes on loopback.

The binaries come from ``scripts/kube-build.sh`` (built from their Go modules, cached
outside the clone). The API server runs as a managed cluster's does: TLS with the
state directory's CA, client certificates, ``--authorization-mode=Node,RBAC``, signed
ServiceAccount tokens, the default admission plugins (ServiceAccount, Pod Security,
NodeRestriction, ...). etcd keeps its data under ``STATE/etcd`` without fsync (a test
cluster: speed over durability); :meth:`ControlPlane.start` with ``fresh=True`` wipes it.

Order of start: etcd (``/health``), the API server (``/readyz`` as the admin), then the
controllers and the scheduler, which wait for the API server on their own. Stop is the
reverse, SIGTERM then SIGKILL after a grace period.

>>> # with ControlPlane(Path("build/kube-local"), bin_dir) as plane:
>>> #     subprocess.run(["kubectl", "--kubeconfig", plane.kubeconfig, "get", "ns"])
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from kube_local import certs

ALL = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
ENVTEST = ("etcd", "kube-apiserver")


class ControlPlaneError(RuntimeError):
    """A component did not start; the message names it and the tail of its log."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build(root: Path, components: Sequence[str] = ()) -> Path:
    """Build (or find in the cache) the binaries; returns their directory."""
    out = subprocess.run(
        ["bash", str(root / "scripts" / "kube-build.sh"), *components],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    return Path(out.stdout.strip().splitlines()[-1])


class ControlPlane:
    """Start and stop the components; ``url`` and ``kubeconfig`` once started."""

    def __init__(
        self,
        state: Path,
        bin_dir: Path,
        components: Sequence[str] = ALL,
        apiserver_args: Sequence[str] = (),
        node_ip: str | None = None,
    ) -> None:
        """``node_ip``: serve the API on that (non-loopback) address of this machine and
        advertise it, so the ``kubernetes`` Service gets a real endpoint that pods on a
        real node reach (default: loopback, no endpoint)."""
        self.state = state.resolve()
        self.node_ip = node_ip
        self.address = node_ip or "127.0.0.1"
        self.bin = bin_dir
        self.components = tuple(components)
        self.apiserver_args = tuple(apiserver_args)
        self.url = ""
        self.kubeconfig = self.state / "kubeconfig"
        self._procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.authority = certs.Authority(self.state)

    # -- life cycle ---------------------------------------------------------------------

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self, fresh: bool = True) -> None:
        self.authority.ensure_all()
        (self.state / "logs").mkdir(exist_ok=True)
        if fresh:
            shutil.rmtree(self.state / "etcd", ignore_errors=True)
        try:
            etcd_url = self._start_etcd()
            port = free_port()
            self.url = f"https://{self.address}:{port}"
            self._start_apiserver(etcd_url, port)
            self.authority.write_kubeconfig(self.kubeconfig, self.url, certs.ADMIN)
            self._wait_ready("kube-apiserver", self._apiserver_ready, 90)
            if "kube-controller-manager" in self.components:
                self._start_controller_manager()
                # its ServiceAccount controller gives every namespace its `default` account
                self._wait_ready("kube-controller-manager", self._default_account_exists, 60)
            if "kube-scheduler" in self.components:
                self._start_scheduler()
        except BaseException:
            self.stop()
            raise

    def stop(self, grace: float = 10.0) -> None:
        for _name, proc in reversed(self._procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs.clear()

    def pids(self) -> list[int]:
        return [proc.pid for _, proc in self._procs]

    def running(self) -> dict[str, bool]:
        return {name: proc.poll() is None for name, proc in self._procs}

    # -- components ---------------------------------------------------------------------

    def _spawn(self, name: str, args: Sequence[str]) -> subprocess.Popen[bytes]:
        log = (self.state / "logs" / f"{name}.log").open("ab")
        proc = subprocess.Popen(
            [str(self.bin / name), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._procs.append((name, proc))
        return proc

    def _start_etcd(self) -> str:
        client, peer = free_port(), free_port()
        client_url, peer_url = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
        self._spawn(
            "etcd",
            [
                f"--data-dir={self.state / 'etcd'}",
                f"--listen-client-urls={client_url}",
                f"--advertise-client-urls={client_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=default={peer_url}",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )
        self._wait_ready("etcd", lambda: _get_ok(f"{client_url}/health"), 30)
        return client_url

    def _start_apiserver(self, etcd_url: str, port: int) -> None:
        pki = self.authority.path
        serving = self.authority.serving(self.node_ip)
        self._spawn(
            "kube-apiserver",
            [
                f"--etcd-servers={etcd_url}",
                f"--bind-address={self.address}",
                f"--advertise-address={self.address}",
                # a loopback address is refused by the endpoint reconciler; pods of the node
                # agent reach the API server through KUBERNETES_SERVICE_HOST, which it sets
                *(() if self.node_ip else ("--endpoint-reconciler-type=none",)),
                f"--secure-port={port}",
                f"--cert-dir={self.state / 'apiserver'}",
                f"--tls-cert-file={serving[0]}",
                f"--tls-private-key-file={serving[1]}",
                f"--client-ca-file={pki('ca.crt')}",
                f"--kubelet-client-certificate={pki('admin.crt')}",
                f"--kubelet-client-key={pki('admin.key')}",
                f"--kubelet-certificate-authority={pki('ca.crt')}",
                "--kubelet-preferred-address-types=InternalIP",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki('sa.pub')}",
                f"--service-account-signing-key-file={pki('sa.key')}",
                f"--service-cluster-ip-range={certs.SERVICE_CIDR}",
                "--authorization-mode=Node,RBAC",
                "--enable-admission-plugins=NodeRestriction",
                "--allow-privileged=true",
                "--profiling=false",
                "--v=1",
                *self.apiserver_args,
            ],
        )

    def _start_controller_manager(self) -> None:
        pki = self.authority.path
        config = self.authority.write_kubeconfig(
            self.state / "controller-manager.kubeconfig", self.url, certs.CONTROLLER_MANAGER
        )
        self._spawn(
            "kube-controller-manager",
            [
                f"--kubeconfig={config}",
                "--bind-address=127.0.0.1",
                "--secure-port=0",
                "--leader-elect=false",
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={pki('sa.key')}",
                f"--root-ca-file={pki('ca.crt')}",
                f"--cluster-signing-cert-file={pki('ca.crt')}",
                f"--cluster-signing-key-file={pki('ca.key')}",
                f"--service-cluster-ip-range={certs.SERVICE_CIDR}",
                "--v=1",
            ],
        )

    def _start_scheduler(self) -> None:
        config = self.authority.write_kubeconfig(
            self.state / "scheduler.kubeconfig", self.url, certs.SCHEDULER
        )
        self._spawn(
            "kube-scheduler",
            [
                f"--kubeconfig={config}",
                f"--authentication-kubeconfig={config}",
                f"--authorization-kubeconfig={config}",
                "--bind-address=127.0.0.1",
                "--secure-port=0",
                "--leader-elect=false",
                "--v=1",
            ],
        )

    # -- readiness ----------------------------------------------------------------------

    def _apiserver_ready(self) -> bool:
        return _get_ok(f"{self.url}/readyz", self.client_context())

    def _default_account_exists(self) -> bool:
        url = f"{self.url}/api/v1/namespaces/default/serviceaccounts/default"
        return _get_ok(url, self.client_context())

    def client_context(self) -> ssl.SSLContext:
        """TLS as the admin: trusts the CA, presents the admin certificate."""
        context = ssl.create_default_context(cafile=str(self.authority.path("ca.crt")))
        context.load_cert_chain(self.authority.path("admin.crt"), self.authority.path("admin.key"))
        return context

    def version(self) -> str:
        """``gitVersion`` as the API server reports it at ``/version``."""
        with urllib.request.urlopen(f"{self.url}/version", context=self.client_context()) as r:
            return str(json.load(r)["gitVersion"])

    def _wait_ready(self, name: str, probe: object, timeout: float) -> None:
        assert callable(probe)
        deadline = time.monotonic() + timeout
        proc = next(p for n, p in self._procs if n == name)
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ControlPlaneError(f"{name} exited with {proc.returncode}: {self._tail(name)}")
            if probe():
                return
            time.sleep(0.2)
        raise ControlPlaneError(f"{name} not ready after {timeout:.0f} s: {self._tail(name)}")

    def _tail(self, name: str, lines: int = 8) -> str:
        path = self.state / "logs" / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:]) + f"\n(see {path})"


def _get_ok(url: str, context: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as response:
            return int(response.status) == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError, ssl.SSLError):
        return False
