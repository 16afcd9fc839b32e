"""A recording double of the driver's control API, for many jobs at once.

The API: docs/architecture.md, 'Control API', and docs/control-api.md.

Served under ``/jobs/{namespace}/{name}`` (point ``CJOB_CONTROL_URL_TEMPLATE`` at
``http://127.0.0.1:{port}/jobs/{namespace}/{name}``). Like the real driver it
reads its bearer token from the job's token Secret and its storage location from
the job's ConfigMap (both read from the real API server through the harness's :class:`Node`), answers only
while its pod is ``Running``, and commits each checkpoint by writing ``_metadata``
into the (``file://``) store with ids that keep increasing across restarts. A stop
with savepoint writes a savepoint and lets the pod succeed, like a real exit 0.

Like the real driver with ``checkpointing.triggeredBy == "driver"`` it paces periodic
checkpoints itself: whenever it is asked anything and ``intervalSeconds`` has passed
since the pod started or since its last periodic checkpoint, it takes one (at most
one per request, so checkpoints are never closer than the interval).
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from cjob_operator_testing import control_docs, snapshots
from cjob_operator_testing.node import Node


@dataclass
class Call:
    namespace: str
    job: str
    method: str
    path: str
    authorized: bool
    body: Any = None
    at: float = field(default_factory=time.monotonic)


@dataclass
class JobBehaviour:
    """Knobs a test turns per job."""

    fail_next_checkpoints: int = 0
    fail_stop: bool = False
    ready: bool = True
    state: str = "RUNNING"
    """What ``GET /v1/job`` reports as the job's state (``RESTARTING``, …)."""
    history: list[dict[str, Any]] = field(default_factory=list)
    pod_uid: str | None = None
    """The driver pod whose periodic clock ``periodic_at`` is."""
    periodic_at: float = 0.0


class FakeDriver:
    def __init__(self, kube: Node) -> None:
        self.kube = kube
        self.calls: list[Call] = []
        self.jobs: dict[tuple[str, str], JobBehaviour] = {}
        self.app = web.Application()
        self.app.router.add_route("*", "/jobs/{namespace}/{job}/{tail:.*}", self._dispatch)

    def behaviour(self, namespace: str, job: str) -> JobBehaviour:
        return self.jobs.setdefault((namespace, job), JobBehaviour())

    def calls_to(self, namespace: str, job: str, method: str, path: str) -> list[Call]:
        return [
            c
            for c in list(self.calls)
            if (c.namespace, c.job, c.method, c.path) == (namespace, job, method, path)
        ]

    # -- plumbing ---------------------------------------------------------------------

    async def _token(self, namespace: str, job: str) -> str | None:
        secret = await self.kube.find("secrets", namespace, f"{job}-control-token")
        raw = (secret or {}).get("data", {}).get("token")
        return None if raw is None else base64.b64decode(raw).decode()

    async def _job_root(self, namespace: str, job: str) -> Path:
        cm = await self.kube.find("configmaps", namespace, f"{job}-config")
        if cm is None:
            raise web.HTTPServiceUnavailable(text="no job configuration")
        storage = json.loads(cm["data"]["job.json"])["storage"]
        base = Path(storage["endpoint"][len("file://") :])
        return Path(base, str(storage["bucket"]), str(storage["root"]))

    async def _config(self, namespace: str, job: str) -> dict[str, Any]:
        cm = await self.kube.find("configmaps", namespace, f"{job}-config")
        if cm is None:
            raise web.HTTPServiceUnavailable(text="no job configuration")
        doc: dict[str, Any] = json.loads(cm["data"]["job.json"])
        return doc

    async def _pace(self, namespace: str, job: str) -> None:
        """The driver's own periodic trigger (``triggeredBy: driver``)."""
        checkpointing = (await self._config(namespace, job)).get("checkpointing", {})
        if checkpointing.get("triggeredBy") != "driver":
            return
        pod = await self.kube.find("pods", namespace, f"{job}-driver") or {}
        uid = str(
            pod.get("metadata", {}).get("uid")
            or pod.get("metadata", {})
            .get("annotations", {})
            .get("checkpointed.dev/deployment-id", "")
        )
        behaviour = self.behaviour(namespace, job)
        now = time.time()
        if behaviour.pod_uid != uid:
            behaviour.pod_uid, behaviour.periodic_at = uid, now
            return
        if now - behaviour.periodic_at >= float(checkpointing.get("intervalSeconds", 30)):
            behaviour.periodic_at = now
            await self._take(namespace, job, "checkpoint", "periodic")

    async def _running(self, namespace: str, job: str) -> bool:
        pod = await self.kube.find("pods", namespace, f"{job}-driver")
        return bool(pod) and (pod or {}).get("status", {}).get("phase") == "Running"

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        ns, job, tail = (request.match_info[k] for k in ("namespace", "job", "tail"))
        path = "/" + tail
        token = await self._token(ns, job)
        authorized = token is not None and request.headers.get("Authorization") == f"Bearer {token}"
        body = await request.json() if request.can_read_body else None
        self.calls.append(Call(ns, job, request.method, path, authorized, body))
        if not await self._running(ns, job):
            refusal = control_docs.refused("driver not running", "job-not-running")
            return web.json_response(refusal, status=503)
        if path in ("/healthz", "/readyz"):
            ok = path == "/healthz" or self.behaviour(ns, job).ready
            return web.json_response({"ok": ok}, status=200 if ok else 503)
        if not authorized:
            return web.json_response(
                control_docs.refused("unauthorized", "unauthorized"), status=401
            )
        await self._pace(ns, job)
        handler = {
            ("GET", "/v1/job"): self._job,
            ("POST", "/v1/checkpoints"): self._trigger,
            ("GET", "/v1/checkpoints"): self._checkpoints,
            ("POST", "/v1/stop"): self._stop,
        }.get((request.method, path))
        if handler is None:
            return web.json_response(control_docs.refused("not found", "not-found"), status=404)
        return await handler(ns, job, body)

    # -- the contract -------------------------------------------------------------------

    async def _job(self, ns: str, job: str, _: Any) -> web.Response:
        state = self.behaviour(ns, job).state
        return web.json_response(control_docs.job(job, state, time.time()))

    async def _trigger(self, ns: str, job: str, body: Any) -> web.Response:
        kind = str((body or {}).get("kind", "checkpoint"))
        entry = await self._take(ns, job, kind, "api")
        return web.json_response(control_docs.triggered(entry["id"], kind), status=202)

    async def _take(self, ns: str, job: str, kind: str, trigger: str) -> dict[str, Any]:
        behaviour = self.behaviour(ns, job)
        now = time.time()
        root = await self._job_root(ns, job)
        entry: dict[str, Any] = {"kind": kind, "trigger_timestamp": now, "trigger": trigger}
        if behaviour.fail_next_checkpoints > 0:
            behaviour.fail_next_checkpoints -= 1
            cid = snapshots.abandon(root)
            entry.update(id=cid, status="FAILED", failure_reason="declined", failure_timestamp=now)
        else:
            cid, folder = snapshots.commit(root, kind == "savepoint", now)
            entry.update(
                id=cid,
                status="COMPLETED",
                completion_timestamp=now,
                duration=0.05,
                size=0,
                path=folder.as_uri(),
            )
        behaviour.history.append(entry)
        return entry

    async def _checkpoints(self, ns: str, job: str, _: Any) -> web.Response:
        return web.json_response(control_docs.overview(self.behaviour(ns, job).history))

    async def _stop(self, ns: str, job: str, body: Any) -> web.Response:
        if self.behaviour(ns, job).fail_stop:
            failed = control_docs.refused("savepoint failed", "savepoint-failed")
            return web.json_response(failed, status=500)
        root = await self._job_root(ns, job)
        sid, folder = snapshots.commit(root, True, time.time())
        await self.kube.set_pod_phase(ns, f"{job}-driver", "Succeeded", exit_code=0)
        return web.json_response(control_docs.stopped(sid, folder.as_uri()))
