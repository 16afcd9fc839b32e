"""The node agent: a kubelet of its own against the real API server, pods as Docker containers.

It registers the Node (``kube-local`` by default: Ready, with capacity, its log endpoint
in ``status.daemonEndpoints``), renews its Lease in ``kube-node-lease`` and runs what the
real scheduler binds to it (a watch on ``spec.nodeName``). Every request goes as
``system:node:<name>`` (group ``system:nodes``), so the Node authorizer and the
NodeRestriction admission judge it as they judge a kubelet: it reads only the Secrets,
ConfigMaps and ServiceAccounts its pods reference and asks TokenRequest for tokens bound
to the pod. Services and EndpointSlices (for the hosts file) are read as
``system:kube-proxy``.

Lifecycle of a pod (one :class:`~kube_local.node.pod_worker.PodWorker` task each):

1. *admitted*: a loopback address of its own from the pod range (default 127.1.0.0/16;
   host networking, so ``status.podIP`` is where its processes listen);
2. *configured*: volumes written under the state directory (ConfigMaps, Secrets, the
   projected ServiceAccount token the ServiceAccount admission added, emptyDirs),
   environment resolved; a missing reference keeps the container waiting in
   ``CreateContainerConfigError`` and is retried;
3. *running*: one ``docker run`` per container (init containers first), status
   ``Running`` through ``pods/status``; probes; restarts by ``restartPolicy``
   (``CrashLoopBackOff`` from 10 s, doubling to 5 min); with ``Never`` the pod ends
   ``Succeeded`` or ``Failed``;
4. *terminating*: the API server marks a deleted pod (``deletionTimestamp``, grace
   period); the agent stops its containers (SIGTERM, SIGKILL at the deadline), then
   deletes the object for good (``gracePeriodSeconds=0`` with a uid precondition).
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import logging
import os
import pathlib
import shutil
from collections.abc import Iterator
from typing import Any

from kube_local.node import api as api_mod
from kube_local.node import engine as engine_mod
from kube_local.node import hosts, logs, pod_worker, podspec, status

log = logging.getLogger(__name__)
Obj = dict[str, Any]
DEFAULT_POD_CIDR = "127.1.0.0/16"
LEASE_SECONDS = 40
RENEW_SECONDS = 10.0


class AddressPool:
    """Pod IPs: the range's first host upwards, reused once their pod is gone."""

    def __init__(self, cidr: str) -> None:
        self._free: list[str] = []
        self._hosts: Iterator[ipaddress.IPv4Address | ipaddress.IPv6Address] = ipaddress.ip_network(
            cidr
        ).hosts()

    def take(self) -> str:
        return self._free.pop(0) if self._free else str(next(self._hosts))

    def give_back(self, ip: str) -> None:
        self._free.append(ip)


class Kubelet:
    def __init__(
        self,
        node_api: api_mod.Api,
        proxy_api: api_mod.Api,
        state_dir: pathlib.Path,
        docker: str,
        pod_cidr: str = DEFAULT_POD_CIDR,
        node_name: str = status.NODE,
        serving: tuple[pathlib.Path, pathlib.Path, pathlib.Path] | None = None,
    ) -> None:
        self.api, self.proxy = node_api, proxy_api
        self.node_name = node_name
        self.state_dir = state_dir = state_dir.resolve()  # docker mounts need absolute paths
        state_id = hashlib.sha256(str(state_dir).encode()).hexdigest()[:12]
        self.engine = engine_mod.Engine(docker, state_id)
        host, _, port = node_api.url.removeprefix("https://").rpartition(":")
        self.api_host, self.api_port = host, int(port)
        self.pods_dir = state_dir / "pods"
        self.hosts_file = state_dir / "hosts"
        self.addresses = AddressPool(pod_cidr)
        self.serving = serving
        self.workers: dict[str, pod_worker.PodWorker] = {}
        self.seen: dict[str, Obj] = {}  # this node's pods by uid, as last watched
        self.services: dict[str, Obj] = {}
        self.slices: dict[str, Obj] = {}
        self.log_port = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._log_server: Any = None
        self._hosts_pending = False
        self.closing = False

    # -- life cycle --------------------------------------------------------------------

    async def start(self) -> None:
        """Clean up after an earlier run, serve logs, register the node, follow pods."""
        removed = self.engine.remove_all_now()
        if removed:
            log.info("removed %d container(s) an earlier kube-local left", removed)
        shutil.rmtree(self.pods_dir, ignore_errors=True)
        self.pods_dir.mkdir(parents=True)
        hosts.write_in_place(self.hosts_file, self._hosts_text())
        if self.serving is not None:
            self._log_server, self.log_port = await logs.serve(self, *self.serving)
        await self._register()
        loop = asyncio.get_running_loop()
        pods = f"spec.nodeName={self.node_name}"
        self._tasks = [
            loop.create_task(self._renew_forever()),
            loop.create_task(
                api_mod.list_and_watch(
                    self.api, "/api/v1/pods", {"fieldSelector": pods}, self._pods, self._pod
                )
            ),
            loop.create_task(self._follow_proxy("/api/v1/services", self.services)),
            loop.create_task(
                self._follow_proxy("/apis/discovery.k8s.io/v1/endpointslices", self.slices)
            ),
        ]

    async def stop(self) -> None:
        """Stop every container now (the node is going away; the pods stay in the API)."""
        self.closing = True
        here = asyncio.current_task()
        others = [t for t in asyncio.all_tasks() if t is not here]
        for task in others:
            task.cancel()
        if others:
            _, pending = await asyncio.wait(others, timeout=15)
            for task in pending:
                log.warning("still running at stop: %r", task)
        self.engine.remove_all_now()
        if self._log_server is not None:
            await self._log_server.cleanup()
        await self.api.close()
        await self.proxy.close()

    # -- the Node and its Lease ---------------------------------------------------------

    async def _register(self) -> None:
        node = status.node(self.node_name, self.log_port)
        try:
            await self.api.request("POST", "/api/v1/nodes", node)
        except api_mod.ApiError as exc:
            if exc.status != 409:
                raise
        await self._node_status()
        await self._renew()

    async def _node_status(self) -> None:
        body = {"status": status.node(self.node_name, self.log_port)["status"]}
        await self.api.request(
            "PATCH",
            f"/api/v1/nodes/{self.node_name}/status",
            body,
            content_type="application/strategic-merge-patch+json",
        )

    async def _renew(self) -> None:
        path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{self.node_name}"
        lease = await self.api.get(path)
        if lease is None:
            body = status.lease(self.node_name, LEASE_SECONDS)
            await self.api.request(
                "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", body
            )
            return
        lease["spec"]["renewTime"] = status.micro_now()
        lease["spec"]["holderIdentity"] = self.node_name
        await self.api.request("PUT", path, lease)

    async def _renew_forever(self) -> None:
        beats = 0
        while True:
            await asyncio.sleep(RENEW_SECONDS)
            beats += 1
            try:
                await self._renew()
                if beats % 6 == 0:
                    await self._node_status()
            except (TimeoutError, api_mod.ApiError, OSError) as exc:
                log.warning("lease renewal failed: %s", exc)

    # -- pods -----------------------------------------------------------------------

    def _pods(self, items: list[Obj]) -> None:
        present = {p["metadata"]["uid"] for p in items}
        for uid in list(self.seen):
            if uid not in present:
                self._pod("DELETED", self.seen[uid])
        for pod in items:
            self._pod("MODIFIED", pod)

    def _pod(self, kind: str, pod: Obj) -> None:
        uid = pod["metadata"]["uid"]
        self._refresh_hosts_soon()
        if kind == "DELETED":
            self.seen.pop(uid, None)
            worker = self.workers.get(uid)
            if worker is not None:
                worker.terminate(0)
            return
        self.seen[uid] = pod
        if uid not in self.workers:
            self._follow(pod)
        worker = self.workers.get(uid)
        if worker is not None and pod["metadata"].get("deletionTimestamp"):
            worker.terminate(int(pod["metadata"].get("deletionGracePeriodSeconds") or 0))

    def _follow(self, pod: Obj) -> None:
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            return
        worker = pod_worker.PodWorker(self, pod)
        self.workers[pod["metadata"]["uid"]] = worker
        worker.start()

    def worker_of(self, namespace: str, name: str) -> pod_worker.PodWorker | None:
        for worker in self.workers.values():
            meta = worker.pod["metadata"]
            if meta["namespace"] == namespace and meta["name"] == name:
                return worker
        return None

    # -- hosts file --------------------------------------------------------------------

    async def _follow_proxy(self, path: str, into: dict[str, Obj]) -> None:
        def listed(items: list[Obj]) -> None:
            into.clear()
            into.update({i["metadata"]["uid"]: i for i in items})
            self._refresh_hosts_soon()

        def event(kind: str, obj: Obj) -> None:
            if kind == "DELETED":
                into.pop(obj["metadata"]["uid"], None)
            else:
                into[obj["metadata"]["uid"]] = obj
            self._refresh_hosts_soon()

        await api_mod.list_and_watch(self.proxy, path, {}, listed, event)

    def _hosts_text(self) -> str:
        return hosts.render(
            self.api_host,
            list(self.seen.values()),
            list(self.services.values()),
            list(self.slices.values()),
        )

    def _refresh_hosts_soon(self) -> None:
        if self._hosts_pending:
            return
        self._hosts_pending = True

        def refresh() -> None:
            self._hosts_pending = False
            hosts.write_in_place(self.hosts_file, self._hosts_text())

        asyncio.get_running_loop().call_soon(refresh)

    # -- what workers need ---------------------------------------------------------------

    async def references(self, pod: Obj) -> podspec.Lookup:
        """Fetch what the pod references (as the Node authorizer allows) into a lookup."""
        namespace = pod["metadata"]["namespace"]
        wanted = sorted(podspec.references(pod))
        found = await asyncio.gather(
            *(self.api.get(f"/api/v1/namespaces/{namespace}/{p}/{n}") for p, n in wanted)
        )
        table = dict(zip(wanted, found, strict=True))
        return lambda plural, _ns, name: table.get((plural, name))

    async def token(self, pod: Obj, projection: Obj) -> str:
        """A TokenRequest bound to the pod, as the projection asks (audience, expiry)."""
        meta = pod["metadata"]
        account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
        spec: Obj = {
            "expirationSeconds": int(projection.get("expirationSeconds", 3607)),
            "boundObjectRef": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": meta["name"],
                "uid": meta["uid"],
            },
        }
        if projection.get("audience"):
            spec["audiences"] = [projection["audience"]]
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        path = f"/api/v1/namespaces/{meta['namespace']}/serviceaccounts/{account}/token"
        answer = await self.api.request("POST", path, body)
        return str(answer["status"]["token"])

    def facts(self, ip: str) -> podspec.PodFacts:
        return podspec.PodFacts(
            ip=ip, host_ip="127.0.0.1", api_host=self.api_host, api_port=self.api_port
        )

    async def write_status(self, pod: Obj, new_status: Obj) -> bool:
        """Patch ``pods/status``; ``False`` when the pod is gone (or another of its name)."""
        meta = pod["metadata"]
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status"
        body = {"metadata": {"uid": meta["uid"]}, "status": new_status}
        try:
            await self.api.request("PATCH", path, body, content_type="application/merge-patch+json")
        except api_mod.ApiError as exc:
            if exc.status in (404, 409):
                return False
            log.warning("status of %s/%s refused: %s", meta["namespace"], meta["name"], exc)
        return True

    def event(self, pod: Obj, reason: str, message: str, warning: bool = False) -> None:
        body = status.event(pod, reason, message, warning, self.node_name)
        path = f"/api/v1/namespaces/{pod['metadata']['namespace']}/events"

        async def send() -> None:
            try:
                await self.api.request("POST", path, body)
            except (TimeoutError, api_mod.ApiError, OSError) as exc:
                log.warning("event %s refused: %s", reason, exc)

        asyncio.get_running_loop().create_task(send())

    async def remove(self, pod: Obj) -> None:
        """Delete the object for good, as the kubelet does once the containers are gone."""
        meta = pod["metadata"]
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": meta["uid"]},
        }
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
        try:
            await self.api.request("DELETE", path, body)
        except api_mod.ApiError as exc:
            if exc.status not in (404, 409):
                log.warning("deleting %s/%s refused: %s", meta["namespace"], meta["name"], exc)


def pod_cidr() -> str:
    return os.environ.get("CJOB_KUBE_LOCAL_POD_CIDR", DEFAULT_POD_CIDR)
