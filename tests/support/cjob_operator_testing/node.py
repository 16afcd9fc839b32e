"""The harness plays the scheduler and one node against a real kube-apiserver, as
envtest-based operator tests do (there is no kubelet and no scheduler in envtest).

- As ``system:kube-scheduler`` it watches unbound pods and binds each to its node
  (``pods/binding``).
- As ``system:node:<name>`` (a client certificate signed by the plane's CA, so the
  Node authorizer and NodeRestriction judge it as they judge a kubelet) it registers
  its Node (``Ready``), renews its Lease in ``kube-node-lease`` so the node lifecycle
  controller never evicts its pods, watches the pods bound to it, writes their
  ``pods/status`` and confirms their deletion (a pod bound to a node stays
  ``Terminating`` until its node deletes it with grace period 0).

What the pods do is the subclass's business (:meth:`Node.on_pod`): here they do nothing
until a test sets their phase (:meth:`Node.set_pod_phase`); :class:`~.kubelet.LocalKubelet`
runs them as local processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from typing import Any

from kube_local import certs
from kube_local import control_plane as control_plane_mod

from cjob_operator_testing.kube_api import MERGE, ApiError, AsyncApi, Credentials

LOG = logging.getLogger(__name__)
STRATEGIC = "application/strategic-merge-patch+json"
LEASE_SECONDS = 40
PLURAL_PATHS = {"pods", "services", "configmaps", "secrets", "events"}


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _key(pod: dict[str, Any]) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def pod_path(namespace: str, name: str, sub: str | None = None) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}" + (f"/{sub}" if sub else "")


def container_status(pod: dict[str, Any], state: dict[str, Any], ready: bool) -> dict[str, Any]:
    container = pod["spec"]["containers"][0]
    return {
        "name": container["name"],
        "image": container["image"],
        "imageID": "",
        "ready": ready,
        "started": ready,
        "restartCount": 0,
        "state": state,
    }


def phase_status(
    pod: dict[str, Any], phase: str, exit_code: int | None, started: str | None
) -> dict[str, Any]:
    """What a kubelet reports for a single-container pod in ``phase``."""
    at = now()
    start = started or at
    running = phase == "Running"
    status: dict[str, Any] = {
        "phase": phase,
        "startTime": pod.get("status", {}).get("startTime") or start,
        "hostIP": "127.0.0.1",
        "podIP": "127.0.0.1",
        "podIPs": [{"ip": "127.0.0.1"}],
        "conditions": [
            {"type": t, "status": "True" if running else "False", "lastTransitionTime": at}
            for t in ("Ready", "ContainersReady")
        ]
        + [{"type": "Initialized", "status": "True", "lastTransitionTime": at}],
    }
    if running:
        state: dict[str, Any] = {"running": {"startedAt": start}}
        status["containerStatuses"] = [container_status(pod, state, True)]
    elif exit_code is not None:
        terminated = {
            "exitCode": exit_code,
            "reason": "Error" if exit_code else "Completed",
            "startedAt": start,
            "finishedAt": at,
        }
        status["containerStatuses"] = [container_status(pod, {"terminated": terminated}, False)]
    return status


class Node:
    """One node (and the scheduler that binds every unbound pod to it)."""

    def __init__(self, plane: control_plane_mod.ControlPlane, name: str = "harness-node") -> None:
        self.name = name
        authority = plane.authority
        self.api = AsyncApi(Credentials.of_client(plane.url, authority, certs.node_client(name)))
        self.scheduler = AsyncApi(Credentials.of_client(plane.url, authority, certs.SCHEDULER))
        self.admin = AsyncApi(Credentials.of_client(plane.url, authority, certs.ADMIN))
        self._tasks: list[asyncio.Task[None]] = []
        self.started: dict[str, str] = {}
        """Pod uid → when its container started (``startedAt``)."""

    # -- lifecycle (on the harness's loop) ----------------------------------------------

    async def start(self) -> None:
        for api in (self.api, self.scheduler, self.admin):
            await api.__aenter__()
        await self._register()
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._heartbeat()),
            loop.create_task(self._bind_unbound()),
            loop.create_task(self._follow_own()),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for api in (self.api, self.scheduler, self.admin):
            await api.__aexit__()

    async def _register(self) -> None:
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": {"kubernetes.io/hostname": self.name}},
            "status": {
                "capacity": {"cpu": "64", "memory": "256Gi", "pods": "110"},
                "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"},
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "lastHeartbeatTime": now(),
                        "lastTransitionTime": now(),
                    }
                ],
                "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            },
        }
        await self.api.call("POST", "/api/v1/nodes", node)

    async def _heartbeat(self) -> None:
        """Renew the node's Lease (what the node lifecycle controller reads for health)."""
        path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{self.name}"
        while True:
            spec = {
                "holderIdentity": self.name,
                "leaseDurationSeconds": LEASE_SECONDS,
                "renewTime": micro_now(),
            }
            with contextlib.suppress(ApiError, OSError):
                if await self.api.get(path) is None:
                    lease = {"metadata": {"name": self.name}, "spec": spec}
                    await self.api.call("POST", path.rsplit("/", 1)[0], lease)
                else:
                    await self.api.call("PATCH", path, {"spec": spec}, MERGE)
            await asyncio.sleep(10)

    # -- the scheduler ------------------------------------------------------------------

    async def _bind_unbound(self) -> None:
        async for kind, pod in self.scheduler.watch(
            "/api/v1/pods", "fieldSelector=spec.nodeName%3D"
        ):
            if kind != "DELETED" and not pod["metadata"].get("deletionTimestamp"):
                await self.bind(pod["metadata"]["namespace"], pod["metadata"]["name"])

    async def bind(self, namespace: str, name: str) -> None:
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": self.name},
        }
        status, body = await self.scheduler.http(
            "POST", pod_path(namespace, name, "binding"), binding
        )
        if status >= 400 and status not in (404, 409):
            raise ApiError(status, body)

    # -- the node -----------------------------------------------------------------------

    async def _follow_own(self) -> None:
        async for kind, pod in self.api.watch(
            "/api/v1/pods", f"fieldSelector=spec.nodeName%3D{self.name}"
        ):
            try:
                await self.on_pod(kind, pod)
            except ApiError as exc:
                if exc.status not in (404, 409):
                    LOG.exception("node %s: %s pod %s", self.name, kind, _key(pod))
            except Exception:  # one pod's failure must not stop the node following the rest
                LOG.exception("node %s: %s pod %s", self.name, kind, _key(pod))

    async def on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        """A pod bound to this node changed. Here: a deleted pod is confirmed at once
        (its containers, never started, stop at once)."""
        if kind != "DELETED" and pod["metadata"].get("deletionTimestamp"):
            await self.confirm_deletion(pod)

    async def confirm_deletion(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        body = {"gracePeriodSeconds": 0, "preconditions": {"uid": meta["uid"]}}
        status, answer = await self.api.http(
            "DELETE", pod_path(meta["namespace"], meta["name"]), body
        )
        if status >= 400 and status not in (404, 409):
            raise ApiError(status, answer)

    async def report(
        self, pod: dict[str, Any], phase: str, exit_code: int | None = None
    ) -> dict[str, Any]:
        """Write ``pods/status`` as the node (a strategic merge patch, as the kubelet does)."""
        meta = pod["metadata"]
        started = self.started.setdefault(meta["uid"], now())
        patch = {
            "metadata": {"uid": meta["uid"]},
            "status": phase_status(pod, phase, exit_code, started),
        }
        answer = await self.api.call(
            "PATCH", pod_path(meta["namespace"], meta["name"], "status"), patch, STRATEGIC
        )
        return dict(answer)

    async def set_pod_phase(
        self, namespace: str, name: str, phase: str, exit_code: int | None = None
    ) -> bool:
        """Play the kubelet for a test: report ``phase`` for the pod (bound first if the
        scheduler has not come to it yet); ``False`` if there is no such pod."""
        for _ in range(200):
            pod = await self.admin.get(pod_path(namespace, name))
            if pod is None:
                return False
            if pod["spec"].get("nodeName"):
                await self.report(pod, phase, exit_code)
                return True
            await self.bind(namespace, name)
        raise AssertionError(f"pod {namespace}/{name} never bound")

    async def find(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        """Read an object as the admin (for the doubles: the fake driver)."""
        assert plural in PLURAL_PATHS
        return await self.admin.get(f"/api/v1/namespaces/{namespace}/{plural}/{name}")
