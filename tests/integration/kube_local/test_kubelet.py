"""The node agent: what the real scheduler binds to the node runs as containers on the
local Docker engine, judged by the real API server (Node authorizer, NodeRestriction).

Needs a Docker engine (skips with the reason where none can run; fails instead under
``CJOB_REQUIRE_DOCKER=1``, as in CI) and the images ``scripts/docker-smoke.sh
--build-only`` makes (built here when missing).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import waiting
from tests.integration.kube_local.conftest import (
    BASE,
    POD_CIDR,
    ROOT,
    RUNTIME,
    Kube,
    docker_ready,
    kubernetes,
    start_server,
    stop_server,
)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    started_engine = docker_ready()
    state = tmp_path_factory.mktemp("kubelet") / "state"
    process, url = start_server(state, node=True)
    try:
        yield Kube(state, url)
    finally:
        stop_server(process)
    label = hashlib.sha256(str(state.resolve()).encode()).hexdigest()[:12]
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=kube-local.state={label}"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    if started_engine:
        subprocess.run(
            ["bash", "scripts/docker-smoke.sh", "--stop-engine"],
            cwd=ROOT,
            capture_output=True,
            timeout=120,
            check=False,
        )
    assert left == [], "the stopped server left containers behind"


@pytest.fixture
def api(node: Kube) -> Any:
    return kubernetes.client.CoreV1Api(node.client())


@pytest.fixture
def space(api: Any) -> str:
    name = f"k-{uuid.uuid4().hex[:8]}"
    api.create_namespace({"metadata": {"name": name}})
    waiting.wait_until(
        lambda: _find(lambda: api.read_namespaced_service_account("default", name)),
        10,
        "the default service account",
    )
    return name


def _find(read: Any) -> Any:
    try:
        return read()
    except kubernetes.client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _pod(name: str, script: str, image: str = BASE, **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": image, "command": ["/bin/bash", "-c", script]}
    container |= spec.pop("container", {})
    return {
        "metadata": {"name": name, "labels": spec.pop("labels", {})},
        "spec": {"restartPolicy": "Never", "containers": [container], **spec},
    }


def _status(api: Any, ns: str, name: str) -> dict[str, Any]:
    found = _find(lambda: api.read_namespaced_pod(name, ns, _preload_content=False))
    if found is None:
        return {}
    return dict(json.loads(found.data).get("status") or {})


def _phase_in(api: Any, ns: str, name: str, *phases: str) -> dict[str, Any] | None:
    st = _status(api, ns, name)
    return st if st.get("phase") in phases else None


def test_exit_codes_become_phases_with_the_termination_message(api: Any, space: str) -> None:
    api.create_namespaced_pod(space, _pod("ok", "echo fine"))
    api.create_namespaced_pod(space, _pod("bad", "echo 'it broke' > /dev/termination-log; exit 3"))
    api.create_namespaced_pod(
        space,
        _pod(
            "tail",
            "echo last words; exit 4",
            container={"terminationMessagePolicy": "FallbackToLogsOnError"},
        ),
    )
    waiting.wait_until(lambda: _phase_in(api, space, "ok", "Succeeded"), 60, "ok Succeeded")
    bad = waiting.wait_until(lambda: _phase_in(api, space, "bad", "Failed"), 60, "bad Failed")
    term = bad["containerStatuses"][0]["state"]["terminated"]
    assert (term["exitCode"], term["reason"], term["message"]) == (3, "Error", "it broke\n")
    tail = waiting.wait_until(lambda: _phase_in(api, space, "tail", "Failed"), 60, "tail Failed")
    assert tail["containerStatuses"][0]["state"]["terminated"]["message"] == "last words\n"
    assert api.read_namespaced_pod_log("tail", space) == "last words\n"


def test_pod_ip_field_ref_and_service_names_resolve_to_pods(api: Any, space: str) -> None:
    api.create_namespaced_pod(space, _pod("server", "sleep 300", labels={"app": "srv"}))
    api.create_namespaced_service(
        space,
        {
            "metadata": {"name": "srv"},
            "spec": {"selector": {"app": "srv"}, "clusterIP": "None", "ports": [{"port": 80}]},
        },
    )
    api.create_namespaced_service(
        space,
        {
            "metadata": {"name": "outside"},
            "spec": {"type": "ExternalName", "externalName": "127.0.9.1"},
        },
    )
    server = waiting.wait_until(
        lambda: _phase_in(api, space, "server", "Running"), 60, "server Running"
    )
    api.create_namespaced_pod(
        space,
        _pod(
            "client",
            f"echo $MY_IP; getent hosts srv.{space}.svc | cut -d' ' -f1; "
            "getent hosts kubernetes.default.svc | cut -d' ' -f1; "
            f"getent hosts outside.{space}.svc | cut -d' ' -f1",
            container={
                "env": [{"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
            },
        ),
    )
    client = waiting.wait_until(
        lambda: _phase_in(api, space, "client", "Succeeded"), 60, "client done"
    )
    mine, service, apiserver, outside = api.read_namespaced_pod_log("client", space).split()
    assert mine == client["podIP"] != server["podIP"]
    assert ipaddress.ip_address(mine) in ipaddress.ip_network(POD_CIDR)
    assert service == server["podIP"]
    assert apiserver == "127.0.0.1"
    assert outside == "127.0.9.1"


def test_config_maps_secrets_and_limits_reach_the_container(api: Any, space: str) -> None:
    api.create_namespaced_config_map(
        space, {"metadata": {"name": "cfg"}, "data": {"greeting": "hello"}}
    )
    api.create_namespaced_secret(
        space,
        {"metadata": {"name": "sec"}, "data": {"password": base64.b64encode(b"s3cret").decode()}},
    )
    api.create_namespaced_pod(
        space,
        _pod(
            "reader",
            "cat /cfg/greeting; echo; echo $PASSWORD; sleep 300",
            container={
                "env": [
                    {
                        "name": "PASSWORD",
                        "valueFrom": {"secretKeyRef": {"name": "sec", "key": "password"}},
                    }
                ],
                "volumeMounts": [{"name": "cfg", "mountPath": "/cfg", "readOnly": True}],
                "resources": {"limits": {"memory": "64Mi", "cpu": "500m"}},
            },
            volumes=[{"name": "cfg", "configMap": {"name": "cfg"}}],
        ),
    )
    st = waiting.wait_until(
        lambda: _phase_in(api, space, "reader", "Running"), 60, "reader Running"
    )
    waiting.wait_until(
        lambda: api.read_namespaced_pod_log("reader", space) == "hello\ns3cret\n", 30, "the log"
    )
    container = st["containerStatuses"][0]["containerID"].split("://")[1]
    limits = subprocess.run(
        ["docker", "inspect", "-f", "{{.HostConfig.Memory}} {{.HostConfig.NanoCpus}}", container],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert limits == [str(64 * 2**20), str(500_000_000)]


def test_a_missing_secret_waits_and_starts_once_it_exists(api: Any, space: str) -> None:
    api.create_namespaced_pod(
        space,
        _pod(
            "patient",
            "echo $TOKEN",
            container={
                "env": [
                    {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "later", "key": "t"}}}
                ]
            },
        ),
    )

    def config_error() -> dict[str, Any] | None:
        statuses = _status(api, space, "patient").get("containerStatuses") or [{}]
        found: dict[str, Any] | None = (statuses[0].get("state") or {}).get("waiting")
        return found if found and found.get("reason") == "CreateContainerConfigError" else None

    assert (
        waiting.wait_until(config_error, 30, "CreateContainerConfigError")["message"]
        == 'secret "later" not found'
    )
    api.create_namespaced_secret(space, {"metadata": {"name": "later"}, "stringData": {"t": "now"}})
    waiting.wait_until(
        lambda: _phase_in(api, space, "patient", "Succeeded"), 60, "started and done"
    )
    assert api.read_namespaced_pod_log("patient", space) == "now\n"


def test_deletion_is_graceful_then_forced_and_the_object_waits_for_it(api: Any, space: str) -> None:
    api.create_namespaced_pod(
        space,
        _pod(
            "stubborn",
            "trap 'echo TERM' TERM; echo trapped; while true; do sleep 0.1; done",
            terminationGracePeriodSeconds=3,
        ),
    )
    st = waiting.wait_until(lambda: _phase_in(api, space, "stubborn", "Running"), 60, "Running")
    container = st["containerStatuses"][0]["containerID"].split("://")[1]
    waiting.wait_until(
        lambda: "trapped" in api.read_namespaced_pod_log("stubborn", space),
        10,
        "bash to install its TERM trap",
    )
    started = time.monotonic()
    api.delete_namespaced_pod("stubborn", space)
    marked = api.read_namespaced_pod("stubborn", space)
    assert marked.metadata.deletion_timestamp is not None
    assert marked.metadata.deletion_grace_period_seconds == 3
    waiting.wait_until(
        lambda: _find(lambda: api.read_namespaced_pod("stubborn", space)) is None,
        30,
        "the pod object gone",
    )
    assert time.monotonic() - started >= 2.5  # SIGTERM was ignored: SIGKILL at the deadline
    gone = subprocess.run(["docker", "inspect", container], capture_output=True, check=False)
    assert gone.returncode != 0


def test_a_pod_without_its_service_account_is_refused(api: Any, space: str) -> None:
    with pytest.raises(kubernetes.client.ApiException) as refused:
        api.create_namespaced_pod(space, _pod("orphan", "true", serviceAccountName="nobody"))
    assert refused.value.status == 403
    assert json.loads(refused.value.body)["message"] == (
        f'pods "orphan" is forbidden: error looking up service account {space}/nobody: '
        'serviceaccount "nobody" not found'
    )


def test_a_deployment_keeps_its_pod(node: Kube, api: Any, space: str) -> None:
    apps = kubernetes.client.AppsV1Api(node.client())
    apps.create_namespaced_deployment(
        space,
        {
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [{"name": "main", "image": BASE, "command": ["sleep", "300"]}]
                    },
                },
            },
        },
    )

    def running() -> list[Any]:
        pods = api.list_namespaced_pod(space, label_selector="app=web").items
        return [
            p
            for p in pods
            if p.status and p.status.phase == "Running" and p.metadata.deletion_timestamp is None
        ]

    (first,) = waiting.wait_until(running, 60, "the deployment's pod")
    api.delete_namespaced_pod(first.metadata.name, space, grace_period_seconds=0)
    (second,) = waiting.wait_until(
        lambda: [p for p in running() if p.metadata.uid != first.metadata.uid], 60, "a new pod"
    )
    assert second.metadata.name.startswith("web-")
    deployment = waiting.wait_until(
        lambda: (
            (d := apps.read_namespaced_deployment("web", space)).status.ready_replicas == 1 and d
        ),
        30,
        "readyReplicas 1",
    )
    assert deployment.status.available_replicas == 1


def test_in_a_pod_the_api_answers_by_the_mounted_token(api: Any, space: str) -> None:
    script = (
        "import os, ssl, urllib.request\n"
        "sa = '/var/run/secrets/kubernetes.io/serviceaccount'\n"
        "token = open(sa + '/token').read()\n"
        "ctx = ssl.create_default_context(cafile=sa + '/ca.crt')\n"
        "base = 'https://kubernetes.default.svc:' + os.environ['KUBERNETES_SERVICE_PORT']\n"
        "for path in ('/version', '/api/v1/namespaces/' + open(sa + '/namespace').read()"
        " + '/secrets'):\n"
        "    try:\n"
        "        print(urllib.request.urlopen(urllib.request.Request(base + path, headers="
        "{'Authorization': 'Bearer ' + token}), context=ctx).status)\n"
        "    except urllib.error.HTTPError as e:\n"
        "        print(e.code, e.read().decode())\n"
    )
    api.create_namespaced_pod(
        space,
        {
            "metadata": {"name": "caller"},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {"name": "main", "image": RUNTIME, "command": ["python", "-c", script]}
                ],
            },
        },
    )
    waiting.wait_until(lambda: _phase_in(api, space, "caller", "Succeeded"), 90, "caller done")
    version, forbidden = api.read_namespaced_pod_log("caller", space).split("\n", 1)
    assert version == "200"
    assert forbidden.startswith("403 {"), forbidden  # the real server indents its Status
    status = json.loads(forbidden.removeprefix("403 "))
    assert status["message"] == (
        f'secrets is forbidden: User "system:serviceaccount:{space}:default" cannot list '
        f'resource "secrets" in API group "" in the namespace "{space}"'
    )


def test_the_node_is_registered_ready_and_renews_its_lease(node: Kube, api: Any) -> None:
    found = api.read_node("kube-local")
    ready = [c for c in found.status.conditions if c.type == "Ready"]
    assert ready[0].status == "True"
    assert not found.spec.taints
    port = found.status.daemon_endpoints.kubelet_endpoint.port
    url = f"https://127.0.0.1:{port}/containerLogs/default/none/main"
    anonymous = ssl.create_default_context(cafile=str(node.ca))
    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(url, context=anonymous, timeout=10)  # no client certificate
    admin = ssl.create_default_context(cafile=str(node.ca))
    admin.load_cert_chain(node.state / "pki" / "admin.crt", node.state / "pki" / "admin.key")
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(url, context=admin, timeout=10)
    assert missing.value.code == 404
    leases = kubernetes.client.CoordinationV1Api(node.client())
    first = leases.read_namespaced_lease("kube-local", "kube-node-lease").spec.renew_time
    waiting.wait_until(
        lambda: (
            leases.read_namespaced_lease("kube-local", "kube-node-lease").spec.renew_time > first
        ),
        30,
        "the lease renewed",
    )


def test_the_node_reports_events_and_reads_only_what_its_pods_reference(
    node: Kube, api: Any, space: str
) -> None:
    api.create_namespaced_secret(space, {"metadata": {"name": "unused"}, "stringData": {"k": "v"}})
    api.create_namespaced_pod(space, _pod("quick", "echo done"))
    waiting.wait_until(lambda: _phase_in(api, space, "quick", "Succeeded"), 60, "quick done")

    def started() -> list[Any]:
        events = api.list_namespaced_event(space, field_selector="involvedObject.name=quick")
        return [
            e for e in events.items if e.reason == "Started" and e.source.component == "kubelet"
        ]

    waiting.wait_until(started, 30, "the Started event")
    as_node = node.kubectl(
        "get",
        "secret",
        "unused",
        "-n",
        space,
        "--client-certificate",
        str(node.state / "pki" / "node-kube-local.crt"),
        "--client-key",
        str(node.state / "pki" / "node-kube-local.key"),
        check=False,
    )
    assert as_node.returncode == 1
    assert "no relationship found between node 'kube-local' and this object" in as_node.stderr
