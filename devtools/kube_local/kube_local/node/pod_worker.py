"""One pod's life on the node: its containers from admission to removal (see ``kubelet``)."""

from __future__ import annotations

import asyncio
import logging
import os
import pathlib
import shutil
from typing import TYPE_CHECKING, Any

from kube_local.node import api as api_mod
from kube_local.node import engine as engine_mod
from kube_local.node import podspec, probes, status

if TYPE_CHECKING:
    from kube_local.node.kubelet import Kubelet

log = logging.getLogger("kube_local.node.kubelet")
Obj = dict[str, Any]


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
        self._dirty = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None

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

    def _status(self, finished: bool) -> Obj:
        current = self.k.seen.get(self.uid, self.pod)
        return status.pod_status(
            current, self.ip, self.start_time, self.containers, self.ready, finished=finished
        )

    def publish(self) -> None:
        """Have ``pods/status`` say what the containers do now (written in order, soon)."""
        self._dirty.set()
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_task(self._write_forever())

    async def _write_forever(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            if not await self.k.write_status(self.pod, self._status(self.finished)):
                return

    # -- the pod's life -------------------------------------------------------------

    async def _main(self) -> None:
        spec = self.pod.get("spec") or {}
        try:
            every = [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]
            for c in every:
                self.containers[c["name"]] = status.ContainerState.waiting(
                    c, "ContainerCreating", ""
                )
            self.publish()
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
            if self.k.closing:
                pass
            elif self.stopping is None:
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
        lookup = await self.k.references(self.pod)
        env = podspec.environment(self.pod, c, facts, lookup)
        sec = podspec.security(self.pod, c)
        options = podspec.run_options(c, sec, image_user)
        options += ["--volume", f"{self.k.hosts_file.resolve()}:/etc/hosts:ro"]
        tokens = await self._tokens()
        options += self._mounts(c, facts, lookup, tokens)
        for key, value in env.items():
            options += ["--env", f"{key}={value}"]
        entrypoint, args = podspec.command_line(c, env)
        return options + entrypoint, args

    async def _tokens(self) -> dict[str, str]:
        """A token for each ServiceAccount projection of the pod, by its path."""
        out = {}
        for projection in podspec.token_projections(self.pod):
            try:
                out[projection["path"]] = await self.k.token(self.pod, projection)
            except api_mod.ApiError as exc:
                raise podspec.ConfigError(f"token request refused: {exc}") from exc
        return out

    def _mounts(
        self, c: Obj, facts: podspec.PodFacts, lookup: podspec.Lookup, tokens: dict[str, str]
    ) -> list[str]:
        volumes = podspec.volume_sources(self.pod)
        mounts: list[str] = []
        for mount in c.get("volumeMounts") or ():
            name = mount["name"]
            if name not in volumes:
                raise podspec.ConfigError(f"volumeMount {name!r} names no volume of the pod")
            path = self._materialise(volumes[name], facts, lookup, tokens)
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

    def _materialise(
        self, volume: Obj, facts: podspec.PodFacts, lookup: podspec.Lookup, tokens: dict[str, str]
    ) -> pathlib.Path:
        path: pathlib.Path = (self.dir / "volumes" / str(volume["name"])).resolve()
        files = podspec.files_of(volume, self.pod, lookup, facts, lambda p: tokens[p["path"]])
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
        if self._writer is not None:
            self._writer.cancel()
        if self.uid in self.k.seen:
            await self.k.write_status(self.pod, self._status(True))
            await self.k.remove(self.pod)
