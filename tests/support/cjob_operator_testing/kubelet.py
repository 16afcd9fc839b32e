"""A kubelet for one machine: runs each created pod's command as a local process.

A :class:`~.node.Node` of the real API server: for every pending pod bound to it
(it watches them as ``system:node:<name>``) it materialises the pod's ConfigMap
volumes into a directory, resolves its environment (``value``, ``secretKeyRef``,
``fieldRef``) — reading both as the node, so the Node authorizer decides, as for a
kubelet — maps the container command through ``command_map`` (``cjob`` → a local
executable), gives the control API a free local port (rewriting ``control.port`` in
the job configuration), starts the process and reports the pod ``Running`` through
``pods/status``; when the process exits the pod becomes ``Succeeded`` or ``Failed``
with the exit code; when the pod is deleted the process is stopped and the deletion
confirmed (grace period 0), as a kubelet does. Control-API calls reach the process through :meth:`proxy_app`, served
at ``/jobs/{namespace}/{name}/…`` like the fake driver.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from kube_local import control_plane as control_plane_mod

from cjob_operator_testing.kube_api import ApiError
from cjob_operator_testing.loop import free_port
from cjob_operator_testing.node import Node

CommandMap = Callable[[list[str]], list[str]]
SUPPORT = Path(__file__).resolve().parents[1]
"""``tests/support``: pod processes get it on ``PYTHONPATH`` so ``python -m
cjob_operator_testing.standin_driver`` imports (pytest's ``pythonpath`` reaches only
the test process, not its subprocesses)."""
AUTHORIZER_LAG_S = 15.0
"""How long a 403 on a pod's Secret or ConfigMap counts as the Node authorizer not yet
knowing the pod (see :meth:`LocalKubelet._read`)."""
IMAGE_ENTRYPOINT = ["cjob"]
"""What the runtime image runs when a container sets no ``command``: ``cjob ARGS`` (under tini)."""


def standin_command(command: list[str]) -> list[str]:
    """Run ``cjob …`` as the stand-in driver of :mod:`.standin_driver`."""
    if command[:1] == ["cjob"]:
        return [sys.executable, "-m", "cjob_operator_testing.standin_driver", *command[1:]]
    return command


def _relocate(arg: str, places: list[tuple[str, str]]) -> str:
    """Map a path inside the container to the volume's local directory (longest mount)."""
    for mount_path, local in places:
        if arg == mount_path or arg.startswith(mount_path.rstrip("/") + "/"):
            return local + arg[len(mount_path) :]
    return arg


@dataclass
class LocalPod:
    namespace: str
    name: str
    uid: str
    process: asyncio.subprocess.Process
    port: int
    workdir: Path


class LocalKubelet(Node):
    """A :class:`~.node.Node` whose pods run as local processes."""

    def __init__(
        self,
        plane: control_plane_mod.ControlPlane,
        workdir: Path,
        command_map: CommandMap = standin_command,
        name: str = "harness-node",
    ) -> None:
        super().__init__(plane, name)
        self.workdir = workdir
        self.command_map = command_map
        self.pods: dict[tuple[str, str], LocalPod] = {}
        self._launched: set[str] = set()
        self._waiters: set[asyncio.Task[None]] = set()

    async def stop(self) -> None:
        for pod in list(self.pods.values()):
            await self._terminate(pod)
        for task in list(self._waiters):
            task.cancel()
        await super().stop()

    async def on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        key = (meta["namespace"], meta["name"])
        local = self.pods.get(key)
        if kind == "DELETED" or meta.get("deletionTimestamp"):
            if local is not None and local.uid == meta["uid"]:
                await self._terminate(local)
            if kind != "DELETED":
                await self.confirm_deletion(pod)
            return
        if meta["uid"] in self._launched or pod.get("status", {}).get("phase") != "Pending":
            return
        if local is not None:  # a pod of the same name that this node has not seen go
            await self._terminate(local)
        self._launched.add(meta["uid"])
        try:
            local = await self._launch(pod)
        except BaseException:
            self._launched.discard(meta["uid"])  # a later event of the pod tries again
            raise
        await self.report(pod, "Running")
        task = asyncio.get_running_loop().create_task(self._await_exit(pod, local))
        self._waiters.add(task)
        task.add_done_callback(self._waiters.discard)

    async def _await_exit(self, pod: dict[str, Any], local: LocalPod) -> None:
        code = await local.process.wait()
        if self.pods.get((local.namespace, local.name)) is not local:
            return  # stopped by this node (deletion): the deletion reports it
        self.pods.pop((local.namespace, local.name), None)
        exit_code = 128 - code if code < 0 else code
        with contextlib.suppress(ApiError):
            await self.report(pod, "Succeeded" if code == 0 else "Failed", exit_code)

    # -- pods -----------------------------------------------------------------------

    async def _read(self, path: str) -> dict[str, Any]:
        """An object one of this node's pods uses, read as the node (``{}`` if absent).

        The Node authorizer lets a node read only what its pods reference, and learns of
        a pod's references from its own informer, a moment after the binding reaches this
        node's watch: until then it answers 403. A kubelet retries; so does this, for up
        to :data:`AUTHORIZER_LAG_S`.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + AUTHORIZER_LAG_S
        while True:
            try:
                return await self.api.get(path) or {}
            except ApiError as exc:
                if exc.status != 403 or loop.time() >= deadline:
                    raise
            await asyncio.sleep(0.2)

    async def _secret(self, namespace: str, name: str, key: str) -> str:
        secret = await self._read(f"/api/v1/namespaces/{namespace}/secrets/{name}")
        raw = secret.get("data", {}).get(key)
        return "" if raw is None else base64.b64decode(raw).decode()

    async def _env(self, namespace: str, container: dict[str, Any]) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CJOB_")}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SUPPORT), env.get("PYTHONPATH")]))
        for var in container.get("env", []):
            source = var.get("valueFrom") or {}
            if "value" in var:
                env[var["name"]] = str(var["value"])
            elif "secretKeyRef" in source:
                ref = source["secretKeyRef"]
                env[var["name"]] = await self._secret(namespace, ref["name"], ref["key"])
            elif "fieldRef" in source:
                env[var["name"]] = "127.0.0.1"
        return env

    async def _volumes(self, pod: dict[str, Any], root: Path, port: int) -> dict[str, Path]:
        mounts: dict[str, Path] = {}
        namespace = pod["metadata"]["namespace"]
        for volume in pod["spec"].get("volumes", []):
            path = root / "volumes" / volume["name"]
            path.mkdir(parents=True, exist_ok=True)
            if "configMap" in volume:
                name = volume["configMap"]["name"]
                cm = await self._read(f"/api/v1/namespaces/{namespace}/configmaps/{name}")
                for key, value in cm.get("data", {}).items():
                    text = value
                    if key == "job.json":
                        doc = json.loads(value)
                        doc["control"]["port"] = port
                        text = json.dumps(doc)
                    (path / key).write_text(text)
            mounts[volume["name"]] = path
        return mounts

    async def _launch(self, pod: dict[str, Any]) -> LocalPod:
        meta = pod["metadata"]
        container = pod["spec"]["containers"][0]
        root = self.workdir / meta["namespace"] / meta["name"] / meta["uid"]
        port = free_port()
        mounts = await self._volumes(pod, root, port)
        places = sorted(
            ((m["mountPath"], str(mounts[m["name"]])) for m in container.get("volumeMounts", [])),
            key=lambda p: -len(p[0]),
        )
        command = [*container.get("command", IMAGE_ENTRYPOINT), *container.get("args", [])]
        args = [_relocate(arg, places) for arg in command]
        env = await self._env(meta["namespace"], container)
        env["HOME"] = str(mounts.get("tmp", root))
        log = (root / "output.log").open("ab")
        process = await asyncio.create_subprocess_exec(
            *self.command_map(args),
            env=env,
            cwd=str(root),
            stdout=log,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        local = LocalPod(meta["namespace"], meta["name"], meta["uid"], process, port, root)
        self.pods[(meta["namespace"], meta["name"])] = local
        return local

    async def _terminate(self, pod: LocalPod) -> None:
        self.pods.pop((pod.namespace, pod.name), None)
        if pod.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pod.process.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(pod.process.wait(), 5)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pod.process.pid, signal.SIGKILL)
                await pod.process.wait()

    def kill(self, namespace: str, name: str, signum: int = signal.SIGKILL) -> int:
        """Crash a pod's process (as the OOM killer would); returns its pid."""
        pod = self.pods[(namespace, name)]
        os.killpg(pod.process.pid, signum)
        return pod.process.pid

    # -- control API proxy ------------------------------------------------------------

    def proxy_app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/jobs/{namespace}/{job}/{tail:.*}", self._proxy)
        return app

    async def _proxy(self, request: web.Request) -> web.StreamResponse:
        ns, job, tail = (request.match_info[k] for k in ("namespace", "job", "tail"))
        pod = self.pods.get((ns, f"{job}-driver"))
        if pod is None:
            return web.json_response({"error": "no such driver"}, status=503)
        headers = {k: v for k, v in request.headers.items() if k.lower() == "authorization"}
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as s,
                s.request(
                    request.method,
                    f"http://127.0.0.1:{pod.port}/{tail}",
                    data=await request.read(),
                    headers={**headers, "Content-Type": "application/json"},
                ) as resp,
            ):
                return web.Response(
                    status=resp.status, body=await resp.read(), content_type="application/json"
                )
        except aiohttp.ClientError as exc:
            return web.json_response({"error": str(exc)}, status=503)
