"""Entry point: ``kopf run -m cjob_operator.main`` (add ``--standalone`` without peering).

Importing this module registers the handlers and starts, with the operator, an
HTTP endpoint for Prometheus and probes:

- ``GET /metrics`` — the ``cjob_*`` metrics;
- ``GET /healthz`` — liveness (the event loop answers);
- ``GET /readyz`` — readiness (startup handlers finished).

``CJOB_METRICS_PORT`` (default 8080) and ``CJOB_METRICS_HOST`` (default 0.0.0.0)
choose where it listens. kopf's own ``--liveness`` endpoint may be used as well.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import kopf
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from cjob_operator import handlers, metrics

logger = logging.getLogger(__name__)

__all__ = ["handlers"]

_state: dict[str, Any] = {"ready": False, "runner": None}


async def _metrics(_: web.Request) -> web.Response:
    body = generate_latest(metrics.REGISTRY)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def _healthz(_: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _readyz(_: web.Request) -> web.Response:
    return web.Response(text="ok") if _state["ready"] else web.Response(status=503, text="starting")


def app() -> web.Application:
    application = web.Application()
    application.router.add_get("/metrics", _metrics)
    application.router.add_get("/healthz", _healthz)
    application.router.add_get("/readyz", _readyz)
    return application


@kopf.on.startup()
async def start_http(**_: Any) -> None:
    runner = web.AppRunner(app(), access_log=None)
    await runner.setup()
    host = os.environ.get("CJOB_METRICS_HOST", "0.0.0.0")
    port = int(os.environ.get("CJOB_METRICS_PORT", "8080"))
    await web.TCPSite(runner, host, port).start()
    _state["runner"] = runner
    _state["ready"] = True
    logger.info("metrics and probes on http://%s:%d", host, port)


@kopf.on.cleanup()
async def stop_http(**_: Any) -> None:
    runner = _state.get("runner")
    if runner is not None:
        await runner.cleanup()
