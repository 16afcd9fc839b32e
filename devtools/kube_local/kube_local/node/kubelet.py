"""The kubelet: every Pod stored in the API runs as Docker containers of its images.

Lifecycle of a pod (one :class:`PodWorker` task each, on the server's event loop):

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
import os
import pathlib
import shutil
from typing import Any

from kube_local import auth, resources, store
from kube_local.node import engine as engine_mod
from kube_local.node import hosts, podspec, probes, status

log = logging.getLogger(__name__)
Obj = dict[str, Any]
NODE = "kube-local"
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
        self.workers: dict[str, PodWorker] = {}
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
        self.data.create(self.data.type_of("", "nodes"), "", status.node(NODE))
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
        if pod["metadata"].get("deletionTimestamp") and uid_gone(pod):
            return
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            return
        worker = PodWorker(self, pod)
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
            found.setdefault("spec", {})["nodeName"] = NODE
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


def uid_gone(pod: Obj) -> bool:
    return not pod["metadata"].get("uid")


class PodWorker:
    """Runs one pod's containers until they end or the pod is deleted."""

    def __init__(self, kubelet: Kubelet, pod: Obj) -> None:
        self.k, self.pod = kubelet, pod
        self.uid: str = str(pod["metadata"]["uid"])
        self.dir: pathlib.Path = kubelet.pods_dir / self.uid
        self.ip = kubelet.addresses.take()
        self.finished = False
        self.cleaned = False
        self.stopping: int | None = None
        self.stop_event = asyncio.Event()
        self.containers: dict[str, status.ContainerState] = {}
        self.running: dict[str, str] = {}  # container name -> docker name
        self.exited: dict[str, str] = {}  # the last exited docker container of each
        self.ready: dict[str, bool] = {}
        self.start_time = status.now()
        self.task: asyncio.Task[None] | None = None

    def terminating(self) -> bool:
        return self.stopping is not None

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._main())

    def terminate(self, grace: int) -> None:
        if self.stopping is None or grace < self.stopping:
            self.stopping = grace
            self.stop_event.set()
            asyncio.get_running_loop().create_task(self._stop_all(grace))

    # -- status ----------------------------------------------------------------------

    def publish(self, node: bool = False) -> None:
        st = status.pod_status(
            self.pod, self.ip, self.start_time, self.containers, self.ready, finished=self.finished
        )
        self.k.write_status(self.pod, st, node=node)

    # -- the pod's life -------------------------------------------------------------

    async def _main(self) -> None:
        spec = self.pod.get("spec") or {}
        try:
            every = [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]
            for c in every:
                self.containers[c["name"]] = status.ContainerState.waiting(
                    c, "ContainerCreating", ""
                )
            self.publish(node=True)
            self.k.event(
                self.pod,
                "Scheduled",
                f"Successfully assigned {self.pod['metadata']['namespace']}/"
                f"{self.pod['metadata']['name']} to {NODE}",
            )
            for init in spec.get("initContainers") or ():
                code = await self._run_container(init, restart="OnFailure")
                if code != 0 or self.stopping is not None:
                    return
            policy = spec.get("restartPolicy", "Always")
            await asyncio.gather(
                *(self._run_container(c, policy) for c in spec.get("containers") or ())
            )
        except Exception:
            log.exception("pod %s failed in the kubelet", self.pod["metadata"]["name"])
        finally:
            self.finished = True
            if self.stopping is None:
                self.publish()
            else:
                await self._cleanup()

    async def _run_container(self, c: Obj, restart: str) -> int:
        backoff = 10.0
        restarts = 0
        while self.stopping is None:
            container = await self._start(c, restarts)
            if container is None:
                if await self._pause(2.0):
                    return -1
                continue
            exit_ = await self.k.engine.wait(container)
            self.running.pop(c["name"], None)
            self.ready[c["name"]] = False
            message = await self._termination_message(c, container, exit_.code)
            self.containers[c["name"]] = status.ContainerState.terminated(
                c, container, exit_, message, restarts
            )
            earlier = self.exited.pop(c["name"], None)
            if earlier is not None:
                await self.k.engine.remove(earlier)
            self.exited[c["name"]] = container  # kept for `kubectl logs` until the next one
            if self.terminating():
                return exit_.code
            again = restart == "Always" or (restart == "OnFailure" and exit_.code != 0)
            if not again:
                self.publish()
                return exit_.code
            restarts += 1
            self.containers[c["name"]] = self.containers[c["name"]].backing_off(backoff)
            self.publish()
            self.k.event(
                self.pod,
                "BackOff",
                f"Back-off restarting failed container {c['name']}",
                warning=True,
            )
            if await self._pause(backoff):
                return exit_.code
            backoff = min(300.0, backoff * 2)
        return -1

    async def _pause(self, seconds: float) -> bool:
        """Sleep, or return True at once when the pod is being deleted."""
        try:
            await asyncio.wait_for(self.stop_event.wait(), seconds)
        except TimeoutError:
            return False
        return True

    async def _start(self, c: Obj, restarts: int) -> str | None:
        """``docker run`` the container; ``None`` (status written) when it cannot start yet."""
        previous = self.containers.get(c["name"])
        try:
            options, args = await self._prepare(c)
        except podspec.ConfigError as exc:
            text = str(exc)
            reason = (
                "ErrImageNeverPull"
                if "image" in text and "not present" in text
                else "CreateContainerConfigError"
            )
            self.containers[c["name"]] = status.ContainerState.waiting(
                c, reason, str(exc), restarts, previous
            )
            self.publish()
            self.k.event(self.pod, "Failed", f"Error: {exc}", warning=True)
            return None
        name = (
            f"kl-{self.pod['metadata']['namespace']}-{self.pod['metadata']['name']}"
            f"-{self.uid[:8]}-{c['name']}-{restarts}"[:200]
        )
        try:
            await self.k.engine.run(
                name,
                c["image"],
                options,
                args,
                {"io.kubernetes.pod.uid": self.uid, "io.kubernetes.container.name": c["name"]},
            )
        except engine_mod.EngineError as exc:
            self.containers[c["name"]] = status.ContainerState.waiting(
                c, "RunContainerError", str(exc), restarts, previous
            )
            self.publish()
            self.k.event(self.pod, "Failed", f"Error: {exc}", warning=True)
            await self.k.engine.remove(name)
            return None
        self.running[c["name"]] = name
        self.containers[c["name"]] = status.ContainerState.running(c, name, restarts, previous)
        self.ready[c["name"]] = "readinessProbe" not in c
        self.publish()
        self.k.event(self.pod, "Started", f"Started container {c['name']}")
        asyncio.get_running_loop().create_task(self._probe(c, name))
        return name

    async def _prepare(self, c: Obj) -> tuple[list[str], list[str]]:
        try:
            image_user = await self.k.engine.image_user(c["image"])
        except engine_mod.EngineError as exc:
            raise podspec.ConfigError(f"the container engine does not answer: {exc}") from exc
        if image_user is None:
            raise podspec.ConfigError(
                f'Container image "{c["image"]}" is not present with pull policy of Never '
                "(kube-local pulls nothing: build it into the local Docker engine)"
            )
        facts = self.k.facts(self.ip)
        env = podspec.environment(self.pod, c, facts, self.k.lookup)
        sec = podspec.security(self.pod, c)
        options = podspec.run_options(c, sec, image_user)
        options += ["--volume", f"{self.k.hosts_file.resolve()}:/etc/hosts:ro"]
        options += self._mounts(c, facts)
        for key, value in env.items():
            options += ["--env", f"{key}={value}"]
        entrypoint, args = podspec.command_line(c, env)
        return options + entrypoint, args

    def _mounts(self, c: Obj, facts: podspec.PodFacts) -> list[str]:
        volumes = podspec.volume_sources(self.pod)
        account = (self.pod.get("spec") or {}).get("serviceAccountName") or "default"
        mounts: list[str] = []
        wanted = [(m["name"], m) for m in c.get("volumeMounts") or ()]
        if podspec.wants_token(
            self.pod, self.k.lookup("serviceaccounts", self.pod["metadata"]["namespace"], account)
        ) and not any(m["mountPath"] == podspec.SA_DIR for _, m in wanted):
            volumes["kube-api-access"] = {
                "name": "kube-api-access",
                "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]},
            }
            wanted.append(("kube-api-access", {"mountPath": podspec.SA_DIR, "readOnly": True}))
        for name, mount in wanted:
            if name not in volumes:
                raise podspec.ConfigError(f"volumeMount {name!r} names no volume of the pod")
            path = self._materialise(volumes[name], facts)
            source = path / mount["subPath"] if mount.get("subPath") else path
            suffix = ":ro" if mount.get("readOnly") else ""
            mounts += ["--volume", f"{source}:{mount['mountPath']}{suffix}"]
        message = self.dir / f"termination-{c['name']}"
        message.parent.mkdir(parents=True, exist_ok=True)
        message.write_text("")
        os.chmod(message, 0o666)
        target = c.get("terminationMessagePath") or "/dev/termination-log"
        mounts += ["--volume", f"{message}:{target}"]
        return mounts

    def _materialise(self, volume: Obj, facts: podspec.PodFacts) -> pathlib.Path:
        path: pathlib.Path = (self.dir / "volumes" / str(volume["name"])).resolve()
        files = podspec.files_of(
            volume, self.pod, self.k.lookup, facts, self.k.token, self.k.ca_pem
        )
        if files is None:  # emptyDir: made once, kept across container restarts
            if not path.exists():
                path.mkdir(parents=True)
                os.chmod(path, 0o1777)
            return path
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, 0o755)
        for relative, (content, mode) in files.items():
            target = path / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
            os.chmod(target, mode)
        return path

    async def _termination_message(self, c: Obj, container: str, code: int) -> str:
        path = self.dir / f"termination-{c['name']}"
        try:
            message = path.read_text()[:4096]
        except OSError:
            message = ""
        if (
            not message.strip()
            and code != 0
            and c.get("terminationMessagePolicy") == "FallbackToLogsOnError"
        ):
            message = (await self.k.engine.logs(container, tail=80))[-2048:]
        return message

    async def _probe(self, c: Obj, container: str) -> None:
        await probes.follow(self, c, container)

    async def _stop_all(self, grace: int) -> None:
        names = list(self.running.items())
        if names:
            self.k.event(self.pod, "Killing", f"Stopping container {names[0][0]}")
        await asyncio.gather(*(self.k.engine.stop(n, grace) for _, n in names))
        if self.task is not None and self.finished:
            await self._cleanup()

    async def _cleanup(self) -> None:
        if self.cleaned:
            return
        self.cleaned = True
        for container in self.exited.values():
            await self.k.engine.remove(container)
        if self.dir.exists():
            shutil.rmtree(self.dir, ignore_errors=True)
        self.k.addresses.give_back(self.ip)
        self.k.workers.pop(self.uid, None)
        self.publish_final()
        self.k.remove(self.pod)

    def publish_final(self) -> None:
        if self.k.current(self.pod) is None:
            return
        st = status.pod_status(
            self.pod, self.ip, self.start_time, self.containers, self.ready, finished=True
        )
        self.k.write_status(self.pod, st)
