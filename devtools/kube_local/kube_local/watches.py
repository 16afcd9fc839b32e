"""Watches: a resource's events streamed as JSON lines, or over a WebSocket (fabric8).

A watch starts at the client's ``resourceVersion`` (410 Gone when that is older than
the store's history), filters events by namespace and label selector (an object that
stops matching is sent as DELETED, one that starts matching as ADDED), ends with a
bookmark for a watch-list (``sendInitialEvents=true``), and stops at the client's
``timeoutSeconds`` or when it hangs up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp.web

from kube_local import errors, paths, selectors
from kube_local import store as store_mod

Emit = Callable[[dict[str, Any]], Awaitable[None]]
"""Sends one watch event to a client (a JSON line, or a WebSocket message)."""


async def _close(response: aiohttp.web.StreamResponse) -> None:
    if isinstance(response, aiohttp.web.WebSocketResponse):
        with contextlib.suppress(ConnectionResetError):
            await response.close()


async def watch(
    store: store_mod.Store,
    request: aiohttp.web.Request,
    target: paths.Target,
    selector: selectors.Selector,
) -> aiohttp.web.StreamResponse:
    """Stream events as newline-delimited JSON, or one per message over a WebSocket when
    the client asks to upgrade (fabric8, the Java client inside Spark, does)."""
    wanted = request.query.get("resourceVersion", "")
    initial = request.query.get("sendInitialEvents") == "true"
    since = None if wanted in ("", "0") or initial else int(wanted)
    timeout = float(request.query.get("timeoutSeconds", "1800"))
    response: aiohttp.web.StreamResponse
    if request.headers.get("Upgrade", "").lower() == "websocket":
        socket = aiohttp.web.WebSocketResponse(
            protocols=[
                p.strip()
                for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",")
                if p.strip()
            ]
        )
        response = socket

        async def emit(event: dict[str, Any]) -> None:
            await socket.send_str(json.dumps(event))
    else:
        stream = aiohttp.web.StreamResponse()
        stream.content_type = "application/json"
        response = stream

        async def emit(event: dict[str, Any]) -> None:
            await stream.write(json.dumps(event).encode() + b"\n")

    try:
        queue, backlog = store.subscribe(target.type, since)
    except errors.ApiError as failure:
        await response.prepare(request)
        await emit({"type": "ERROR", "object": failure.status()})
        await _close(response)
        return response
    await response.prepare(request)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    try:
        for event in backlog:
            await _send(emit, target, selector, event)
        if initial:
            await _bookmark(store, emit, target)
        while loop.time() < deadline:
            transport = request.transport
            if transport is None or transport.is_closing():
                break
            try:
                event = await asyncio.wait_for(queue.get(), min(1.0, deadline - loop.time()))
            except TimeoutError:
                continue
            await _send(emit, target, selector, event)
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        store.unsubscribe(target.type, queue)
    await _close(response)
    return response


async def _bookmark(store: store_mod.Store, emit: Emit, target: paths.Target) -> None:
    """The end of the initial events of a watch-list (``sendInitialEvents=true``)."""
    t = target.type
    marker = {
        "kind": t.kind,
        "apiVersion": t.api_version(target.version),
        "metadata": {
            "resourceVersion": str(store.version),
            "annotations": {"k8s.io/initial-events-end": "true"},
        },
    }
    await emit({"type": "BOOKMARK", "object": marker})


async def _send(
    emit: Emit, target: paths.Target, selector: selectors.Selector, event: store_mod.Event
) -> None:
    obj, previous = event.object, event.previous
    if target.namespace and obj["metadata"].get("namespace") != target.namespace:
        return
    now_matches = selector.matches(obj)
    before = previous is not None and selector.matches(previous)
    kind = event.type
    if kind == "MODIFIED" and now_matches != before:
        kind = "ADDED" if now_matches else "DELETED"
    elif kind == "DELETED":
        now_matches = before or now_matches
    if not (now_matches or (kind == "DELETED" and before)):
        return
    obj = dict(obj, apiVersion=target.type.api_version(target.version))
    await emit({"type": kind, "object": obj})
