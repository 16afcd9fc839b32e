"""The real node (``scripts/kube-local.sh`` with ``CJOB_KUBE_LOCAL_NODE=kubelet``): a
kubelet v1.37 on containerd, kube-proxy and CoreDNS, checked the way pods use a cluster.

One cluster for the module (``up`` once, ``down`` at the end, and what ``down`` must leave
behind: nothing). A pod of the runtime image, with its ServiceAccount token, reaches the
API server through the ``kubernetes`` Service by its DNS name, another pod through a
headless Service, and a host service through a selectorless Service; a container over its
memory limit is OOMKilled; ``kubectl logs`` and ``exec`` reach the kubelet over TLS.
Skips with the reason where a real node cannot run (not root, no containerd).
"""

from __future__ import annotations

import doctest
import http.server
import importlib
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import waiting
from tests.integration.kube_local.conftest import ROOT, RUNTIME, Kube, docker_ready

SCRIPT = ROOT / "scripts" / "kube-local.sh"
NODE_IP = "10.250.0.1"
PODS_CIDR = "10.244.0."


def _script(state: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CJOB_KUBE_LOCAL_DIR=str(state), CJOB_KUBE_LOCAL_NODE="kubelet")
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.parametrize("name", ["kube_local.cri.configs", "kube_local.cri.images"])
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), verbose=False)
    assert result.attempted > 0 and result.failed == 0


def _requirements() -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "devtools" / "kube_local"))
    check = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-m", "kube_local", "check"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return check.stderr.strip() if check.returncode else ""


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    why = _requirements()
    if why:
        pytest.skip(why)
    started_engine = docker_ready()
    state = tmp_path_factory.mktemp("cri") / "kl"
    up = _script(state, "up")
    assert up.returncode == 0, up.stderr
    assert up.stdout.strip() == f"export KUBECONFIG={state}/kubeconfig"
    kube = Kube(state, (state / "ready").read_text().strip())
    try:
        loaded = _script(state, "load", RUNTIME, timeout=600)
        assert loaded.returncode == 0, loaded.stderr
        yield kube
    finally:
        down = _script(state, "down")
        if started_engine:
            subprocess.run(
                ["bash", "scripts/docker-smoke.sh", "--stop-engine"],
                cwd=ROOT,
                capture_output=True,
                timeout=120,
                check=False,
            )
    assert down.returncode == 0, down.stderr
    _assert_nothing_left(state)


def _assert_nothing_left(state: Path) -> None:
    node_dir = str(state / "node")
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            assert node_dir.encode() not in cmdline, cmdline
    assert node_dir not in Path("/proc/mounts").read_text()
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    assert "cjob0" not in links
    for table in ("filter", "nat"):
        rules = subprocess.run(
            ["iptables", "-t", table, "-S"], capture_output=True, text=True, check=True
        ).stdout
        assert "KUBE-" not in rules and "cjob-kube-local" not in rules, rules


def _pod(kube: Kube, name: str, script: str, **spec: object) -> None:
    container = {
        "name": "main",
        "image": RUNTIME,
        "imagePullPolicy": "Never",
        "command": ["python3", "-c", script],
        **spec,
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"restartPolicy": "Never", "containers": [container]},
    }
    kube.kubectl("apply", "-f", "-", stdin=json.dumps(pod))


def _phase(kube: Kube, name: str) -> dict[str, object]:
    got = kube.kubectl("get", "pod", name, "-o", "json", check=False)
    return json.loads(got.stdout)["status"] if got.returncode == 0 else {}


def _finished(kube: Kube, name: str, timeout: float = 120) -> str:
    waiting.wait_until(
        lambda: _phase(kube, name).get("phase") in ("Succeeded", "Failed"),
        timeout,
        f"pod {name} to finish",
        explain=lambda: str(_phase(kube, name)),
    )
    return kube.kubectl("logs", name).stdout


def test_the_node_is_a_real_kubelet_on_containerd(node: Kube) -> None:
    info = json.loads(node.kubectl("get", "node", "kube-local", "-o", "json").stdout)["status"]
    assert info["nodeInfo"]["kubeletVersion"] == "v1.37.2"
    assert info["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://")
    assert {"type": "InternalIP", "address": NODE_IP} in info["addresses"]


API_PROBE = """
import json, socket, ssl, urllib.request
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
context = ssl.create_default_context(cafile=sa + "/ca.crt")
token = open(sa + "/token").read()
request = urllib.request.Request("https://kubernetes.default.svc/version",
                                 headers={"Authorization": "Bearer " + token})
version = json.load(urllib.request.urlopen(request, context=context))["gitVersion"]
print("api", version)
print("web", urllib.request.urlopen("http://web-headless:8080/", timeout=10).read().decode())
print("host", urllib.request.urlopen("http://host-service.default.svc:18089/").read().decode())
"""

WEB = """
import http.server
class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"hello from web")
http.server.HTTPServer(("", 8080), Hello).serve_forever()
"""


class _Host(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello from the host")

    def log_message(self, *_: object) -> None:
        return


def test_pods_reach_the_api_server_each_other_and_the_host_by_name(node: Kube) -> None:
    host = http.server.HTTPServer((NODE_IP, 18089), _Host)
    threading.Thread(target=host.serve_forever, daemon=True).start()
    try:
        services = [
            {"apiVersion": "v1", "kind": "Service",
             "metadata": {"name": "web-headless"},
             "spec": {"clusterIP": "None", "selector": {"app": "web"},
                      "ports": [{"port": 8080}]}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "host-service"},
             "spec": {"ports": [{"port": 18089}]}},
            {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
             "metadata": {"name": "host-service",
                          "labels": {"kubernetes.io/service-name": "host-service"}},
             "addressType": "IPv4", "ports": [{"port": 18089, "protocol": "TCP"}],
             "endpoints": [{"addresses": [NODE_IP]}]},
        ]  # fmt: skip
        listed = {"apiVersion": "v1", "kind": "List", "items": services}
        node.kubectl("apply", "-f", "-", stdin=json.dumps(listed))
        _pod(node, "web", WEB)
        waiting.wait_until(
            lambda: str(_phase(node, "web").get("podIP", "")).startswith(PODS_CIDR),
            120,
            "the web pod's address",
        )
        _pod(node, "client", API_PROBE)
        out = _finished(node, "client")
        assert _phase(node, "client")["phase"] == "Succeeded", out
        assert out.splitlines() == [
            "api v1.37.2",
            "web hello from web",
            "host hello from the host",
        ]
        served = node.kubectl("exec", "web", "--", "python3", "-c", "print('exec works')")
        assert served.stdout.strip() == "exec works"
    finally:
        host.shutdown()


def test_a_container_over_its_memory_limit_is_oom_killed(node: Kube) -> None:
    hog = "blocks = [bytearray(16 << 20) for _ in range(40)]; print('survived')"
    limits = {"limits": {"memory": "128Mi", "cpu": "500m"}}
    _pod(node, "hog", hog, resources=limits)
    _finished(node, "hog")
    terminated = _phase(node, "hog")["containerStatuses"][0]["state"]["terminated"]  # type: ignore[index]
    assert (terminated["reason"], terminated["exitCode"]) == ("OOMKilled", 137)


def test_a_second_real_node_on_the_machine_is_refused_clearly(node: Kube, tmp_path: Path) -> None:
    second = _script(tmp_path / "second", "up", timeout=120)
    assert second.returncode != 0
    assert "another kube-local node runs on this machine" in (second.stderr + second.stdout)
    assert node.kubectl("get", "node", "kube-local").returncode == 0  # the first one unharmed
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    assert "cjob0" in links
