"""The kubelet: every Pod stored in the API runs as Docker containers of its images.

Lifecycle of a pod (one :class:`~kube_local.node.pod_worker.PodWorker` task each, on the
server's event loop):

1. *admitted*: bound to the node (``spec.nodeName``), given a loopback address of its
   own (127.1.x.y; host networking, so ``status.podIP`` is where its processes listen),
   status ``Pending`` with ``PodScheduled``;
2. *configured*: volumes written under the state directory (ConfigMaps, Secrets, the
   service-account token, emptyDirs), environment resolved; a missing reference keeps
   the container waiting in ``CreateContainerConfigError`` and is retried;
3. *running*: one ``docker run`` per container (init containers first, to completion),
   status ``Running``; readiness and liveness probes; a container that exits is
   restarted or not by ``restartPolicy`` (``CrashLoopBackOff`` from 10 s, doubling
   to 5 min); with ``Never`` the pod ends ``Succeeded`` or ``Failed``;
4. *terminating*: a deletion marks the pod (``deletionTimestamp``, grace period) and
   the kubelet stops its containers (SIGTERM, SIGKILL at the deadline), then removes
   the object for good.

Status is written as the ``pods/status`` subresource would (a replace of the stored
object); Events (Scheduled, Pulled, Created, Started, Killing, BackOff, Unhealthy,
Failed) are stored like the real kubelet's.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import ipaddress
import logging
import pathlib
import shutil
from typing import Any

from kube_local import auth, resources, store
from kube_local.node import engine as engine_mod
from kube_local.node import hosts, pod_worker, podspec, status

log = logging.getLogger(__name__)
Obj = dict[str, Any]
POD_NETWORK = ipaddress.ip_network("127.1.0.0/16")


class AddressPool:
    """Pod IPs: 127.1.0.1 upwards, reused once their pod is gone."""

    def __init__(self) -> None:
        self._free: list[str] = []
        self._hosts = POD_NETWORK.hosts()

    def take(self) -> str:
        return self._free.pop(0) if self._free else str(next(self._hosts))

    def give_back(self, ip: str) -> None:
        self._free.append(ip)


class Kubelet:
    def __init__(
        self,
        data: store.Store,
        tokens: auth.Tokens,
        ca_pem: str,
        state_dir: pathlib.Path,
        docker: str,
        api_host: str,
        api_port: int,
    ) -> None:
        self.data, self.tokens, self.ca_pem = data, tokens, ca_pem
        self.state_dir = state_dir = state_dir.resolve()  # docker mounts need absolute paths
        state_id = hashlib.sha256(str(state_dir).encode()).hexdigest()[:12]
        self.engine = engine_mod.Engine(docker, state_id)
        self.facts_base = (api_host, api_port)
        self.pods_dir = state_dir / "pods"
        self.hosts_file = state_dir / "hosts"
        self.addresses = AddressPool()
        self.workers: dict[str, pod_worker.PodWorker] = {}
        self.pods = data.type_of("", "pods")
        self._hosts_pending = False

    # -- wiring ----------------------------------------------------------------------

    def attach(self) -> None:
        """Clean up after an earlier run, register the node and start following pods."""
        removed = self.engine.remove_all_now()
        if removed:
            log.info("removed %d container(s) an earlier kube-local left", removed)
        shutil.rmtree(self.pods_dir, ignore_errors=True)
        self.pods_dir.mkdir(parents=True)
        hosts.write_in_place(self.hosts_file, self._hosts_text())
        self.data.create(self.data.type_of("", "nodes"), "", status.node(status.NODE))
        self.data.listeners.append(self.on_event)
        self.data.graceful = self.grace_of
        for _, pod in list(self.data.everything()):
            if pod.get("kind") == "Pod":
                self._follow(copy.deepcopy(pod))

    def detach(self) -> None:
        """Stop every container now (the server is stopping)."""
        self.engine.remove_all_now()

    def grace_of(self, t: resources.ResourceType, obj: Obj) -> int | None:
        if t is not self.pods:
            return None
        worker = self.workers.get(obj["metadata"].get("uid", ""))
        if worker is None or worker.finished:
            return None
        return int((obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30))

    def on_event(self, data: store.Store, t: resources.ResourceType, event: store.Event) -> None:
        if t.plural in ("pods", "services", "endpoints") and not t.group:
            self._refresh_hosts_soon()
        if t is not self.pods:
            return
        pod = event.object
        uid = pod["metadata"]["uid"]
        if event.type == "DELETED":
            worker = self.workers.get(uid)
            if worker is not None:
                worker.terminate(0)
            return
        if uid not in self.workers:
            self._follow(pod)
        if pod["metadata"].get("deletionTimestamp"):
            grace = int(pod["metadata"].get("deletionGracePeriodSeconds") or 0)
            self.workers[uid].terminate(grace)

    def _follow(self, pod: Obj) -> None:
        if pod["metadata"].get("deletionTimestamp") and pod_worker.uid_gone(pod):
            return
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            return
        worker = pod_worker.PodWorker(self, pod)
        self.workers[pod["metadata"]["uid"]] = worker
        worker.start()

    # -- hosts file --------------------------------------------------------------------

    def _hosts_text(self) -> str:
        def everything(plural: str) -> list[Obj]:
            return self.data.select(self.data.type_of("", plural), None)

        return hosts.render(
            self.facts_base[0], everything("pods"), everything("services"), everything("endpoints")
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

    def lookup(self, plural: str, namespace: str, name: str) -> Obj | None:
        return self.data.find(self.data.type_of("", plural), namespace, name)

    def token(self, namespace: str, account: str) -> str:
        found = self.lookup("serviceaccounts", namespace, account)
        uid = "" if found is None else str(found["metadata"]["uid"])
        return self.tokens.issue(namespace, account, uid)

    def facts(self, ip: str) -> podspec.PodFacts:
        return podspec.PodFacts(
            ip=ip, host_ip="127.0.0.1", api_host=self.facts_base[0], api_port=self.facts_base[1]
        )

    def current(self, pod: Obj) -> Obj | None:
        found = self.data.find(self.pods, pod["metadata"]["namespace"], pod["metadata"]["name"])
        if found is None or found["metadata"]["uid"] != pod["metadata"]["uid"]:
            return None
        return found

    def write_status(self, pod: Obj, new_status: Obj, node: bool = False) -> None:
        found = self.current(pod)
        if found is None:
            return
        if node:
            found.setdefault("spec", {})["nodeName"] = status.NODE
        elif found.get("status") == new_status:
            return
        found["status"] = new_status
        self.data.replace(self.pods, found)

    def event(self, pod: Obj, reason: str, message: str, warning: bool = False) -> None:
        self.data.create(
            self.data.type_of("", "events"),
            pod["metadata"]["namespace"],
            status.event(pod, reason, message, warning),
        )

    async def logs(self, pod: Obj, container: str | None, tail: int | None) -> str:
        worker = self.workers.get(pod["metadata"]["uid"])
        if worker is None:
            return ""
        both = {**worker.exited, **worker.running}
        names = both if container is None else {k: v for k, v in both.items() if k == container}
        if not names:
            return ""
        return await self.engine.logs(next(iter(names.values())), tail)

    def remove(self, pod: Obj) -> None:
        if self.current(pod) is not None:
            self.data.remove(
                self.pods, pod["metadata"]["namespace"], pod["metadata"]["name"], force=True
            )
