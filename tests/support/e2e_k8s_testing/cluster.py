"""What the Kubernetes scenario needs of a cluster: kubectl, helm, the API, and a way to
kill a container the way a crash would.

:class:`Cluster` wraps the user's tools (``kubectl``, ``helm``) with the kubeconfig of
the cluster under test, plus the official Python client for reads the scenario polls.
A :class:`ContainerKiller` ends a pod's container abruptly (SIGKILL, no grace):
:class:`AnyKiller` asks the local node's containerd to SIGKILL the container's task when
the node is this machine's (``scripts/kube-local.sh``: a crash as the OOM killer makes
one, exit 137), and otherwise (kind, k3d, minikube, any cluster) kills the container's
processes by ``kubectl exec``.

What ran the scenario is read from the cluster itself: the API server's ``/version``
(:meth:`Cluster.control_plane`) and its Node objects (:meth:`Cluster.kubelet`; a node
agent, which no kubelet binary runs, labels its Node ``kube-local.cjob.dev/node-agent``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pathlib
import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, cast

import kubernetes

Obj = dict[str, Any]
NODE_AGENT_LABEL = "kube-local.cjob.dev/node-agent"
"""Set to ``"true"`` on a Node that a node agent registers instead of a kubelet (such as
the pod runner ``scripts/kube-local.sh`` used before it ran a real kubelet)."""


class ScenarioError(AssertionError):
    """A step of the scenario did not happen; the message says which and what was seen."""


@dataclasses.dataclass
class Cluster:
    kubeconfig: pathlib.Path
    helm: str
    kubectl: str = "kubectl"
    log: Callable[[str], None] = print

    def __post_init__(self) -> None:
        config_file = str(self.kubeconfig)
        client = kubernetes.config.new_client_from_config(config_file=config_file)  # type: ignore[no-untyped-call]
        self.core = kubernetes.client.CoreV1Api(client)
        self.custom = kubernetes.client.CustomObjectsApi(client)
        self.version_api = kubernetes.client.VersionApi(client)

    # -- the user's tools ------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig)}

    def run(self, tool: str, *args: str, stdin: str | None = None, timeout: float = 180.0) -> str:
        argv = [self.kubectl if tool == "kubectl" else self.helm, *args]
        done = subprocess.run(
            argv,
            input=stdin,
            capture_output=True,
            text=True,
            env=self._env(),
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            raise ScenarioError(
                f"`{tool} {' '.join(args)}` failed ({done.returncode}): "
                f"{done.stderr.strip() or done.stdout.strip()}"
            )
        return done.stdout

    def kubectl_run(self, *args: str, stdin: str | None = None) -> str:
        return self.run("kubectl", *args, stdin=stdin)

    def helm_run(self, *args: str) -> str:
        return self.run("helm", *args, timeout=300.0)

    # -- reads -----------------------------------------------------------------------

    def pods(self, namespace: str, selector: str = "") -> list[Obj]:
        listed: Any = self.core.list_namespaced_pod(
            namespace, label_selector=selector, _preload_content=False
        )
        items: list[Obj] = json.loads(listed.data)["items"]
        return items

    def cjob(self, namespace: str, name: str) -> Obj | None:
        try:
            found = cast(
                Obj,
                self.custom.get_namespaced_custom_object(
                    "checkpointed.dev", "v1alpha1", namespace, "checkpointedjobs", name
                ),
            )
        except kubernetes.client.ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return found

    def namespace_exists(self, name: str) -> bool:
        try:
            self.core.read_namespace(name)
        except kubernetes.client.ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def control_plane(self) -> str:
        """``kube-apiserver <gitVersion>`` as the server reports it at ``/version``."""
        return f"kube-apiserver {self.version_api.get_code().git_version}"

    def kubelet(self) -> str:
        """``node-agent`` when every Node is a node agent's, ``real`` when none is.

        A node agent labels its Node ``kube-local.cjob.dev/node-agent=true`` (or reports a
        ``kubeletVersion`` naming it); any other Node runs a real kubelet."""
        listed: Any = self.core.list_node(_preload_content=False)
        nodes: list[Obj] = json.loads(listed.data)["items"]
        if not nodes:
            raise ScenarioError("the cluster has no Node: nothing can run the job's pods")
        agents = [n for n in nodes if _is_node_agent(n)]
        if not agents:
            return "real"
        return "node-agent" if len(agents) == len(nodes) else "mixed"

    def events(self, namespace: str) -> list[Obj]:
        listed: Any = self.core.list_namespaced_event(namespace, _preload_content=False)
        items: list[Obj] = json.loads(listed.data)["items"]
        return items


def _is_node_agent(node: Obj) -> bool:
    labels = node["metadata"].get("labels") or {}
    version = ((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", "")
    return labels.get(NODE_AGENT_LABEL) == "true" or "node-agent" in str(version)


class ContainerKiller(Protocol):
    def kill(self, cluster: Cluster, pod: Mapping[str, Any]) -> None:
        """SIGKILL the pod's first container, with no grace (a crash, an OOM kill)."""


@dataclasses.dataclass(frozen=True)
class ContainerdKiller:
    """The local node's containerd (``ctr`` on its socket): SIGKILL the container's task."""

    socket: pathlib.Path

    def kill(self, cluster: Cluster, pod: Mapping[str, Any]) -> None:
        container = _container_id(pod).split("://", 1)[-1]
        argv = ["ctr", "--address", str(self.socket), "--namespace", "k8s.io"]
        done = subprocess.run(
            [*argv, "tasks", "kill", "--signal", "SIGKILL", container],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            raise ScenarioError(f"ctr tasks kill {container}: {done.stderr.strip()}")


def _container_id(pod: Mapping[str, Any]) -> str:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    ids = [str(s.get("containerID") or "") for s in statuses if s.get("containerID")]
    if not ids:
        raise ScenarioError(f"pod {pod['metadata']['name']} has no running container")
    return ids[0]


@dataclasses.dataclass(frozen=True)
class ExecKiller:
    """A real cluster: kill every process of the container but its init (tini)."""

    script: str = (
        "import os, signal\n"
        "for p in os.listdir('/proc'):\n"
        "    if p.isdigit() and int(p) > 1:\n"
        "        try: os.kill(int(p), signal.SIGKILL)\n"
        "        except OSError: pass\n"
    )

    def kill(self, cluster: Cluster, pod: Mapping[str, Any]) -> None:
        meta = pod["metadata"]
        # the exec's own process is killed too: its exit status says nothing
        with contextlib.suppress(ScenarioError):
            cluster.kubectl_run(
                "-n", meta["namespace"], "exec", meta["name"], "--", "python", "-c", self.script
            )


@dataclasses.dataclass(frozen=True)
class AnyKiller:
    """The local node's containerd when ``containerd_socket`` is given (the local target),
    else ``kubectl exec``."""

    containerd_socket: pathlib.Path | None = None
    exec_: ExecKiller = ExecKiller()

    def kill(self, cluster: Cluster, pod: Mapping[str, Any]) -> None:
        if self.containerd_socket is not None and _container_id(pod).startswith("containerd://"):
            ContainerdKiller(self.containerd_socket).kill(cluster, pod)
        else:
            self.exec_.kill(cluster, pod)


def names(items: Sequence[Obj]) -> list[str]:
    return [str(i["metadata"]["name"]) for i in items]
