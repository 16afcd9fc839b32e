"""One real node: containerd, the kubelet, kube-proxy and CoreDNS as local processes.

Life cycle (the order matters; :mod:`kube_local.__main__` drives it):

1. :meth:`CriNode.claim` (before the control plane): take the machine's one node lock,
   sweep what a killed node left, put the node address on its link;
2. the control plane starts, serving on the node address;
3. :meth:`CriNode.start`: containerd with the pause image, the kubelet (Node
   ``kube-local``), kube-proxy in iptables mode, CoreDNS on the node address; returns
   once the Node is Ready and kube-proxy has programmed the ``kubernetes`` Service;
4. :meth:`CriNode.stop`: cordon, delete the node's pods through the kubelet (so CNI tears
   their network down), stop the processes (containerd's shims too), ``kube-proxy
   --cleanup``, unmount, sweep, release the lock. After a node whose serving process was
   killed, :meth:`CriNode.take_lock` and :meth:`CriNode.stop` clean up what it left.

One per machine: kube-proxy programs the host's own iptables chains, and two would fight.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from kube_local import certs
from kube_local import control_plane as control_plane_mod
from kube_local.cri import configs, images, network

LOG = logging.getLogger(__name__)
LOCK = Path("/run/lock/cjob-kube-local-node.lock")
COREDNS = certs.Client("coredns", "system:coredns")
COREDNS_RULES = [
    {"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"],
     "verbs": ["list", "watch"]},
    {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
     "verbs": ["list", "watch"]},
]  # fmt: skip
PROGRAMS = ("containerd", "ctr", "iptables", "ip", "umount")


class NodeUnavailable(RuntimeError):
    """This machine cannot run the node (not root, a program missing, another node)."""


def missing_requirements() -> list[str]:
    """Why a real node cannot run here (empty when it can)."""
    why = []
    if os.geteuid() != 0:
        why.append("it needs root (containerd, the kubelet and iptables)")
    for program in PROGRAMS:
        if shutil.which(program) is None:
            why.append(f"{program} is not installed")
    if _cni_bin() is None:
        why.append("the CNI plugins are not installed (Debian: containernetworking-plugins)")
    return why


def _cni_bin() -> str | None:
    for folder in configs.CNI_BIN_DIRS:
        if all(Path(folder, p).exists() for p in ("bridge", "host-local", "portmap")):
            return folder
    return None


class CriNode:
    def __init__(self, state: Path, bin_dir: Path, node_ip: str, pod_cidr: str) -> None:
        self.layout = configs.Layout(state.resolve(), node_ip, pod_cidr)
        self.bin = bin_dir
        self._lock: IO[bytes] | None = None
        self._procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self._plane: control_plane_mod.ControlPlane | None = None

    # -- 1. claim ---------------------------------------------------------------------

    def claim(self) -> None:
        why = missing_requirements()
        if why:
            raise NodeUnavailable("a real node cannot run here: " + "; ".join(why))
        self.take_lock()
        self._reap_strays()
        network.sweep(self.layout)
        network.add_node_address(self.layout.node_ip)

    def take_lock(self) -> None:
        LOCK.parent.mkdir(parents=True, exist_ok=True)
        lock = LOCK.open("ab")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            raise NodeUnavailable(
                "another kube-local node runs on this machine (one at a time: their "
                "kube-proxies would share the host's iptables chains); stop it with "
                "scripts/kube-local.sh down in its state directory"
            ) from None
        self._lock = lock

    # -- 3. start ---------------------------------------------------------------------

    def start(self, plane: control_plane_mod.ControlPlane) -> None:
        self._plane = plane
        try:
            self._start_containerd()
            self._start_kubelet(plane)
            self._start_kube_proxy(plane)
            self._start_coredns(plane)
            self._wait(120, "the Node kube-local Ready", self._node_ready)
            self._wait(60, "kube-proxy's rules for the kubernetes Service", _proxy_synced)
            self._wait(30, "CoreDNS on the node address", self._dns_answers)
        except BaseException:
            self.stop()
            raise

    def pids(self) -> list[int]:
        return [proc.pid for _, proc in self._procs]

    def _spawn(self, name: str, argv: Sequence[str]) -> None:
        log = self.layout.path("logs", f"{name}.log")
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            proc = subprocess.Popen(
                list(argv),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self._procs.append((name, proc))

    def _write(self, name: str, text: str) -> Path:
        path = self.layout.path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def _start_containerd(self) -> None:
        cni_bin = _cni_bin()
        assert cni_bin is not None  # claim() checked
        self._write("cni/10-cjob.conflist", configs.cni_conflist(self.layout))
        config = self._write("containerd.toml", configs.containerd_toml(self.layout, cni_bin))
        self._spawn("containerd", ["containerd", "--config", str(config)])
        self._wait(30, "containerd", self._containerd_answers)
        if configs.PAUSE_IMAGE not in images.present(self.layout.socket):
            archive = images.pause_archive(self.bin / "pause", self.layout.path("pause.tar"))
            images.import_archive(self.layout.socket, archive)

    def _start_kubelet(self, plane: control_plane_mod.ControlPlane) -> None:
        authority, ip = plane.authority, self.layout.node_ip
        kubeconfig = authority.write_kubeconfig(
            self.layout.path("kubelet.kubeconfig"), plane.url, certs.node_client(configs.NODE)
        )
        serving = authority.kubelet_serving(configs.NODE, ip)
        text = configs.kubelet_config(self.layout, authority.path("ca.crt"), serving)
        config = self._write("kubelet.yaml", text)
        self._spawn(
            "kubelet",
            [
                str(self.bin / "kubelet"),
                f"--kubeconfig={kubeconfig}",
                f"--config={config}",
                f"--hostname-override={configs.NODE}",
                f"--node-ip={ip}",
                f"--root-dir={self.layout.path('kubelet')}",
                f"--cert-dir={self.layout.path('kubelet-pki')}",
                "--v=1",
            ],
        )

    def _start_kube_proxy(self, plane: control_plane_mod.ControlPlane) -> None:
        kubeconfig = plane.authority.write_kubeconfig(
            self.layout.path("kube-proxy.kubeconfig"), plane.url, certs.KUBE_PROXY
        )
        config = self._write("kube-proxy.yaml", configs.kube_proxy_config(self.layout, kubeconfig))
        self._spawn("kube-proxy", [str(self.bin / "kube-proxy"), f"--config={config}", "--v=1"])

    def _start_coredns(self, plane: control_plane_mod.ControlPlane) -> None:
        role = {"metadata": {"name": "system:coredns"}, "rules": COREDNS_RULES}
        binding = {
            "metadata": {"name": "system:coredns"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "system:coredns"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                          "name": COREDNS.user}],
        }  # fmt: skip
        rbac = "/apis/rbac.authorization.k8s.io/v1"
        _call(plane, "POST", f"{rbac}/clusterroles", role, conflict_ok=True)
        _call(plane, "POST", f"{rbac}/clusterrolebindings", binding, conflict_ok=True)
        kubeconfig = plane.authority.write_kubeconfig(
            self.layout.path("coredns.kubeconfig"), plane.url, COREDNS
        )
        corefile = self._write("Corefile", configs.corefile(self.layout, kubeconfig))
        self._spawn("coredns", [str(self.bin / "coredns"), "-conf", str(corefile)])

    # -- readiness --------------------------------------------------------------------

    def _wait(self, timeout: float, what: str, probe: Callable[[], bool]) -> None:
        deadline = time.monotonic() + timeout
        while not probe():
            for name, proc in self._procs:
                if proc.poll() is not None:
                    raise NodeUnavailable(
                        f"{name} exited ({proc.returncode}) while waiting for {what}; "
                        f"see {self.layout.path('logs', name + '.log')}"
                    )
            if time.monotonic() > deadline:
                raise NodeUnavailable(f"timed out after {timeout:g} s waiting for {what}")
            time.sleep(0.2)

    def _containerd_answers(self) -> bool:
        argv = ["ctr", "--address", str(self.layout.socket), "version"]
        return subprocess.run(argv, capture_output=True, check=False).returncode == 0

    def _node_ready(self) -> bool:
        assert self._plane is not None
        node = _call(self._plane, "GET", f"/api/v1/nodes/{configs.NODE}", missing_ok=True)
        conditions = (node or {}).get("status", {}).get("conditions", [])
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    def _dns_answers(self) -> bool:
        with socket.socket() as s:
            s.settimeout(1)
            return s.connect_ex((self.layout.node_ip, 53)) == 0

    # -- 4. stop ----------------------------------------------------------------------

    def stop(self) -> None:
        """Tear down what this node started; nothing unless it holds the machine's lock
        (another node's links and chains are not ours to sweep)."""
        if self._lock is None:
            return
        if self._plane is not None and self._running("kubelet"):
            try:
                self._drain(self._plane)
            except (OSError, urllib.error.URLError, NodeUnavailable) as exc:
                LOG.warning("could not delete the node's pods through the kubelet: %s", exc)
        for name, proc in reversed(self._procs):
            _terminate(name, proc)
        self._procs.clear()
        subprocess.run(
            [str(self.bin / "kube-proxy"), "--cleanup"], capture_output=True, check=False
        )
        self._reap_strays()
        network.unmount_under(self.layout.path())
        network.sweep(self.layout)
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _running(self, name: str) -> bool:
        return any(n == name and p.poll() is None for n, p in self._procs)

    def _drain(self, plane: control_plane_mod.ControlPlane) -> None:
        """Cordon (controllers' new pods stay Pending) and delete every pod of the node;
        the kubelet stops their containers and tears their network down."""
        patch = {"spec": {"unschedulable": True}}
        _call(plane, "PATCH", f"/api/v1/nodes/{configs.NODE}", patch, missing_ok=True)
        query = f"/api/v1/pods?fieldSelector=spec.nodeName%3D{configs.NODE}"
        for pod in (_call(plane, "GET", query) or {}).get("items", []):
            meta = pod["metadata"]
            path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
            _call(plane, "DELETE", path, {"gracePeriodSeconds": 1}, missing_ok=True)

        def gone() -> bool:
            return not (_call(plane, "GET", query) or {}).get("items")

        self._wait(90, "the node's pods to be deleted", gone)

    def _reap_strays(self) -> None:
        """Kill what runs with a path of this node's in its command line: containerd's
        shims (they outlive containerd), and the components of a node whose serving
        process was killed."""
        needle = str(self.layout.path()).encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if needle in (entry / "cmdline").read_bytes():
                    os.kill(int(entry.name), signal.SIGKILL)
            except OSError:
                continue


def _terminate(name: str, proc: subprocess.Popen[bytes], grace: float = 20.0) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        LOG.warning("%s ignored SIGTERM for %g s: killed", name, grace)
        proc.kill()
        proc.wait()


def _proxy_synced() -> bool:
    rules = subprocess.run(
        ["iptables", "-t", "nat", "-S", "KUBE-SERVICES"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return "default/kubernetes:https cluster IP" in rules


def _call(
    plane: control_plane_mod.ControlPlane,
    method: str,
    path: str,
    body: Any = None,
    *,
    missing_ok: bool = False,
    conflict_ok: bool = False,
) -> Any:
    kind = "application/merge-patch+json" if method == "PATCH" else "application/json"
    request = urllib.request.Request(
        plane.url + path,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": kind},
        method=method,
    )
    try:
        with urllib.request.urlopen(request, context=plane.client_context(), timeout=30) as r:
            return json.loads(r.read() or b"null")
    except urllib.error.HTTPError as exc:
        if (exc.code == 404 and missing_ok) or (exc.code == 409 and conflict_ok):
            return None
        raise
