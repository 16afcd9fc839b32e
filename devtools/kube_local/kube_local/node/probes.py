"""Readiness and liveness probes: httpGet (to the pod IP), tcpSocket and exec.

A readiness result sets the container's ``ready`` (and so the pod's ``Ready``); a
liveness failure ``failureThreshold`` times in a row kills the container (SIGTERM,
then SIGKILL after the pod's grace period), after which ``restartPolicy`` applies.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kube_local.node.pod_worker import PodWorker

Obj = dict[str, Any]


def _port(c: Obj, port: Any) -> int:
    if isinstance(port, int):
        return port
    for declared in c.get("ports") or ():
        if declared.get("name") == port:
            return int(declared["containerPort"])
    return int(port)


async def check(worker: PodWorker, c: Obj, container: str, probe: Obj) -> bool:
    timeout = float(probe.get("timeoutSeconds", 1))
    try:
        if "httpGet" in probe:
            get = probe["httpGet"]
            return await asyncio.wait_for(
                _http(worker.ip, _port(c, get["port"]), get.get("path", "/")), timeout
            )
        if "tcpSocket" in probe:
            port = _port(c, probe["tcpSocket"]["port"])
            _, writer = await asyncio.wait_for(asyncio.open_connection(worker.ip, port), timeout)
            writer.close()
            return True
        if "exec" in probe:
            return await worker.k.engine.exec_ok(container, probe["exec"]["command"], timeout)
    except (OSError, TimeoutError):
        return False
    return True


async def _http(host: str, port: int, path: str) -> bool:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode()
        )
        await writer.drain()
        line = await reader.readline()
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    parts = line.split()
    return len(parts) >= 2 and parts[1].isdigit() and 200 <= int(parts[1]) < 400


async def follow(worker: PodWorker, c: Obj, container: str) -> None:
    """Probe ``container`` until it stops running."""
    readiness, liveness = c.get("readinessProbe"), c.get("livenessProbe")
    if readiness is None and liveness is None:
        return
    loop = asyncio.get_running_loop()
    started = loop.time()
    failures = 0
    next_ready = next_live = started
    while worker.running.get(c["name"]) == container and worker.stopping is None:
        now = loop.time()
        if (
            readiness is not None
            and now >= next_ready
            and now - started >= readiness.get("initialDelaySeconds", 0)
        ):
            ok = await check(worker, c, container, readiness)
            if worker.ready.get(c["name"]) != ok and worker.running.get(c["name"]) == container:
                worker.ready[c["name"]] = ok
                worker.publish()
            next_ready = now + readiness.get("periodSeconds", 10)
        if (
            liveness is not None
            and now >= next_live
            and now - started >= liveness.get("initialDelaySeconds", 0)
        ):
            if await check(worker, c, container, liveness):
                failures = 0
            else:
                failures += 1
                worker.k.event(
                    worker.pod, "Unhealthy", f"Liveness probe failed for {c['name']}", warning=True
                )
                if failures >= liveness.get("failureThreshold", 3):
                    worker.k.event(
                        worker.pod,
                        "Killing",
                        f"Container {c['name']} failed liveness probe, will be restarted",
                    )
                    grace = int(
                        (worker.pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
                    )
                    await worker.k.engine.stop(container, grace)
                    return
            next_live = now + liveness.get("periodSeconds", 10)
        await asyncio.sleep(0.5)
