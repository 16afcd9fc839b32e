"""The real node (``scripts/kube-local.sh`` with ``CJOB_KUBE_LOCAL_NODE=kubelet``): a
kubelet v1.37 on containerd, kube-proxy and CoreDNS, checked the way pods use a cluster.

The session's one local Kubernetes (the root conftest's ``local_kubernetes``, which also
checks that ``down`` leaves nothing behind: no process, mount, link or chain). A pod of the runtime image, with its ServiceAccount token, reaches the
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
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import waiting
from cjob_operator_testing import local_kube
from tests.integration.kube_local.conftest import ROOT, RUNTIME, Kube, docker_ready

NODE_IP = "10.250.0.1"
PODS_CIDR = "10.244.0."
CREATED = [
    ("pod", "web"),
    ("pod", "client"),
    ("pod", "hog"),
    ("service", "web-headless"),
    ("service", "host-service"),
    ("endpointslice", "host-service"),
]
"""What the tests create in ``default`` of the shared cluster, deleted after them."""


@pytest.mark.parametrize("name", ["kube_local.cri.configs", "kube_local.cri.images"])
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), verbose=False)
    assert result.attempted > 0 and result.failed == 0


@pytest.fixture(scope="module")
def node(local_kubernetes: local_kube.LocalKubernetes) -> Iterator[Kube]:
    """The session's local Kubernetes (one real node per machine), with the runtime image;
    its ``down`` and the check that nothing is left are the session fixture's."""
    started_engine = docker_ready()
    try:
        local_kubernetes.load(RUNTIME)
        kube = Kube(local_kubernetes.state, local_kubernetes.url)
        yield kube
        # the cluster is the session's: leave it as found
        for kind, name in CREATED:
            kube.kubectl("delete", kind, name, "--ignore-not-found", "--grace-period=1")
    finally:
        if started_engine:
            subprocess.run(
                ["bash", "scripts/docker-smoke.sh", "--stop-engine"],
                cwd=ROOT,
                capture_output=True,
                timeout=120,
                check=False,
            )


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
    second = local_kube.run_script(tmp_path / "second", "up", timeout=120)
    assert second.returncode != 0
    assert "another kube-local node runs on this machine" in (second.stderr + second.stdout)
    assert node.kubectl("get", "node", "kube-local").returncode == 0  # the first one unharmed
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    assert "cjob0" in links
