"""A stand-in for ``cjob driver`` as a real process, until the Spark driver exists.

``python -m cjob_operator_testing.standin_driver driver --config job.json
[--restore-from X]`` reads the job configuration the operator wrote, serves the
control API (docs/architecture.md, 'Control API') on ``control.port`` with the bearer token from
``control.tokenEnv``, commits checkpoints into the ``file://`` store, and appends
one line per start to ``{job root}/_starts.jsonl`` (pid and restore argument) so a
test can see what each incarnation restored from. ``POST /v1/stop`` writes a
savepoint and exits 0 — the same contract the real driver has. With
``checkpointing.triggeredBy == "driver"`` (what the operator writes) it takes a
periodic checkpoint every ``intervalSeconds``, like the real coordinator.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from cjob_operator_testing import control_docs, snapshots


def job_root(config: dict[str, Any]) -> Path:
    storage = config["storage"]
    return Path(storage["endpoint"][len("file://") :], storage["bucket"], storage["root"])


class StandInDriver:
    def __init__(self, config: dict[str, Any], restore_from: str | None) -> None:
        self.root = job_root(config)
        self.token = os.environ.get(config["control"]["tokenEnv"], "")
        self.restore_from = restore_from
        self.name = str(config.get("job", {}).get("name", "job"))
        self.history: list[dict[str, Any]] = []
        self.started = time.time()
        self.stopping = asyncio.Event()
        checkpointing = config.get("checkpointing", {})
        self.interval: float | None = (
            float(checkpointing.get("intervalSeconds", 30))
            if checkpointing.get("triggeredBy") == "driver"
            else None
        )

    def take(self, kind: str) -> int:
        now = time.time()
        cid, folder = snapshots.commit(self.root, kind == "savepoint", now)
        self.history.append(
            {
                "id": cid,
                "status": "COMPLETED",
                "kind": kind,
                "trigger_timestamp": now,
                "completion_timestamp": now,
                "duration": 0.05,
                "size": 0,
                "path": folder.as_uri(),
            }
        )
        return cid

    async def pace(self) -> None:
        """Periodic checkpoints, as the real driver's coordinator takes them."""
        if self.interval is None:
            return
        while not self.stopping.is_set():
            try:
                await asyncio.wait_for(self.stopping.wait(), self.interval)
            except TimeoutError:
                self.take("checkpoint")

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth])
        app.router.add_get("/healthz", self._ok)
        app.router.add_get("/readyz", self._ok)
        app.router.add_get("/v1/job", self._job)
        app.router.add_post("/v1/checkpoints", self._trigger)
        app.router.add_get("/v1/checkpoints", self._checkpoints)
        app.router.add_post("/v1/stop", self._stop)
        return app

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if (
            request.path.startswith("/v1/")
            and request.headers.get("Authorization") != f"Bearer {self.token}"
        ):
            return web.json_response(
                control_docs.refused("unauthorized", "unauthorized"), status=401
            )
        response: web.StreamResponse = await handler(request)
        return response

    async def _ok(self, _: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def _job(self, _: web.Request) -> web.Response:
        return web.json_response(control_docs.job(self.name, "RUNNING", self.started))

    async def _trigger(self, request: web.Request) -> web.Response:
        body = await request.json()
        cid = self.take(str(body.get("kind", "checkpoint")))
        return web.json_response(
            control_docs.triggered(cid, str(body.get("kind", "checkpoint"))), status=202
        )

    async def _checkpoints(self, _: web.Request) -> web.Response:
        return web.json_response(control_docs.overview(self.history))

    async def _stop(self, _: web.Request) -> web.Response:
        sid, folder = snapshots.commit(self.root, True, time.time())
        self.stopping.set()
        return web.json_response(control_docs.stopped(sid, folder.as_uri()))


async def serve(config_path: Path, restore_from: str | None) -> int:
    config = json.loads(config_path.read_text())
    driver = StandInDriver(config, restore_from)
    driver.root.mkdir(parents=True, exist_ok=True)
    with (driver.root / "_starts.jsonl").open("a") as starts:
        starts.write(
            json.dumps({"pid": os.getpid(), "restore_from": restore_from, "time": time.time()})
            + "\n"
        )
    runner = web.AppRunner(driver.app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", int(config["control"]["port"])).start()
    pacing = asyncio.create_task(driver.pace())
    await driver.stopping.wait()
    await pacing
    await asyncio.sleep(0.2)  # let the stop response go out
    await runner.cleanup()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cjob")
    parser.add_argument("command", choices=["driver"])
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--restore-from")
    args = parser.parse_args(argv)
    return asyncio.run(serve(args.config, args.restore_from))


if __name__ == "__main__":
    sys.exit(main())
