"""The shapes the kubelet writes: container states, pod status, the Node, Events.

Pure: values in, Kubernetes JSON out.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import uuid
from collections.abc import Mapping
from typing import Any

NODE = "kube-local"
"""The one node's name (``spec.nodeName`` of every pod)."""

Obj = dict[str, Any]


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclasses.dataclass(frozen=True, slots=True)
class ContainerState:
    """One container's entry of ``status.containerStatuses``."""

    name: str
    image: str
    state: Obj
    restart_count: int = 0
    container_id: str = ""
    last_state: Obj = dataclasses.field(default_factory=dict)

    @classmethod
    def waiting(
        cls,
        c: Obj,
        reason: str,
        message: str,
        restarts: int = 0,
        previous: ContainerState | None = None,
    ) -> ContainerState:
        waiting = {"reason": reason} | ({"message": message} if message else {})
        return cls(
            c["name"], c["image"], {"waiting": waiting}, restarts, last_state=_last(previous)
        )

    @classmethod
    def running(
        cls, c: Obj, container: str, restarts: int, previous: ContainerState | None
    ) -> ContainerState:
        return cls(
            c["name"],
            c["image"],
            {"running": {"startedAt": now()}},
            restarts,
            f"docker://{container}",
            _last(previous),
        )

    @classmethod
    def terminated(
        cls, c: Obj, container: str, exit_: Any, message: str, restarts: int
    ) -> ContainerState:
        reason = "OOMKilled" if exit_.oom_killed else ("Completed" if exit_.code == 0 else "Error")
        term: Obj = {
            "exitCode": exit_.code,
            "reason": reason,
            "startedAt": exit_.started_at[:19] + "Z" if exit_.started_at else now(),
            "finishedAt": exit_.finished_at[:19] + "Z" if exit_.finished_at else now(),
            "containerID": f"docker://{container}",
        }
        if message:
            term["message"] = message
        return cls(c["name"], c["image"], {"terminated": term}, restarts, f"docker://{container}")

    def backing_off(self, seconds: float) -> ContainerState:
        message = f"back-off {seconds:.0f}s restarting failed container={self.name}"
        return dataclasses.replace(
            self,
            state={"waiting": {"reason": "CrashLoopBackOff", "message": message}},
            last_state=self.state,
            restart_count=self.restart_count + 1,
        )

    def for_status(self, ready: bool) -> Obj:
        out: Obj = {
            "name": self.name,
            "image": self.image,
            "imageID": "",
            "ready": ready,
            "restartCount": self.restart_count,
            "started": "running" in self.state,
            "state": self.state,
            "lastState": self.last_state,
        }
        if self.container_id:
            out["containerID"] = self.container_id
        return out


def _last(previous: ContainerState | None) -> Obj:
    if previous is None:
        return {}
    return previous.state if "terminated" in previous.state else previous.last_state


def _condition(kind: str, true: bool) -> Obj:
    return {
        "type": kind,
        "status": "True" if true else "False",
        "lastProbeTime": None,
        "lastTransitionTime": now(),
    }


def pod_status(
    pod: Obj,
    ip: str,
    start_time: str,
    containers: Mapping[str, ContainerState],
    ready: Mapping[str, bool],
    *,
    finished: bool,
) -> Obj:
    spec = pod.get("spec") or {}
    inits = [c["name"] for c in spec.get("initContainers") or ()]
    mains = [c["name"] for c in spec.get("containers") or ()]
    states = [containers[n] for n in mains if n in containers]
    terminated = [s.state["terminated"] for s in states if "terminated" in s.state]
    phase = "Pending"
    if any("running" in s.state for s in states):
        phase = "Running"
    all_ended = bool(mains) and len(terminated) == len(mains)
    if all_ended and (finished or spec.get("restartPolicy") == "Never"):
        phase = "Succeeded" if all(t["exitCode"] == 0 for t in terminated) else "Failed"
    all_ready = bool(mains) and all(ready.get(n, False) for n in mains) and phase == "Running"
    inits_done = all("terminated" in containers[n].state for n in inits if n in containers)
    previous = {c["type"]: c for c in (pod.get("status") or {}).get("conditions") or ()}
    conditions = []
    for kind, true in (
        ("PodScheduled", True),
        ("Initialized", inits_done),
        ("ContainersReady", all_ready),
        ("Ready", all_ready),
    ):
        cond = _condition(kind, true)
        old = previous.get(kind)
        if old is not None and old.get("status") == cond["status"]:
            cond["lastTransitionTime"] = old.get("lastTransitionTime")
        conditions.append(cond)
    return {
        "phase": phase,
        "conditions": conditions,
        "hostIP": "127.0.0.1",
        "hostIPs": [{"ip": "127.0.0.1"}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": start_time,
        "initContainerStatuses": [
            containers[n].for_status(False) for n in inits if n in containers
        ],
        "containerStatuses": [
            containers[n].for_status(ready.get(n, False)) for n in mains if n in containers
        ],
    }


def micro_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def capacity() -> Obj:
    """What the node offers the scheduler: ``CJOB_KUBE_LOCAL_NODE_CPU`` (default 16: more
    than a small machine has, so tests' requests fit; limits are clamped to the real
    CPUs) and ``CJOB_KUBE_LOCAL_NODE_MEMORY`` (default the machine's memory)."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {
        "cpu": os.environ.get("CJOB_KUBE_LOCAL_NODE_CPU", "16"),
        "memory": os.environ.get("CJOB_KUBE_LOCAL_NODE_MEMORY", f"{memory // 1024}Ki"),
        "pods": "110",
        "ephemeral-storage": "100Gi",
    }


def node(name: str, log_port: int) -> Obj:
    """The Node as its agent registers it; the API server reaches its log endpoint at
    its only address (InternalIP 127.0.0.1) and ``daemonEndpoints``' port."""
    stamp = now()
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
            },
        },
        "status": {
            "capacity": capacity(),
            "allocatable": capacity(),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kube-local node agent is posting ready status",
                    "lastHeartbeatTime": stamp,
                    "lastTransitionTime": stamp,
                }
            ],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": log_port}},
            "nodeInfo": {
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
                "kernelVersion": os.uname().release,
                "osImage": "kube-local",
                "containerRuntimeVersion": "docker://",
                "kubeletVersion": "kube-local-node-agent",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }


def lease(name: str, seconds: int) -> Obj:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": "kube-node-lease"},
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": seconds,
            "renewTime": micro_now(),
        },
    }


def event(pod: Obj, reason: str, message: str, warning: bool, node_name: str = NODE) -> Obj:
    meta = pod["metadata"]
    stamp = now()
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{meta['name']}.{uuid.uuid4().hex[:12]}",
            "namespace": meta["namespace"],
        },
        "involvedObject": {
            "kind": "Pod",
            "apiVersion": "v1",
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
        },
        "reason": reason,
        "message": message,
        "type": "Warning" if warning else "Normal",
        "source": {"component": "kubelet", "host": node_name},
        "reportingComponent": "kubelet",
        "reportingInstance": node_name,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }
