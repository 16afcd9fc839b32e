"""The node agent's client of the real API server: JSON over TLS with a client certificate.

One :class:`Api` per identity (the node's ``system:node:<name>``, kube-proxy's
``system:kube-proxy``), so the API server's Node authorizer, NodeRestriction admission
and RBAC judge each request as they would a kubelet's.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp

Obj = dict[str, Any]
log = logging.getLogger(__name__)


class ApiError(Exception):
    """A refusal: ``status`` is the HTTP code, the message the server's."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


class Api:
    def __init__(self, url: str, ca: Path, cert: Path, key: Path) -> None:
        self.url = url
        self._ssl = ssl.create_default_context(cafile=str(ca))
        self._ssl.load_cert_chain(str(cert), str(key))
        self._session: aiohttp.ClientSession | None = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self._ssl, limit=20)
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def request(
        self,
        method: str,
        path: str,
        body: Obj | None = None,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> Obj:
        data = None if body is None else json.dumps(body)
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        async with self._http().request(
            method,
            self.url + path,
            data=data,
            params=params,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=60),
        ) as response:
            text = await response.text()
            if response.status >= 400:
                try:
                    message = json.loads(text).get("message", text)
                except ValueError:
                    message = text
                raise ApiError(response.status, str(message))
            return json.loads(text) if text else {}

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> Obj | None:
        """The object, or ``None`` on 404 (403 too: the Node authorizer's answer for an
        object no pod of this node references)."""
        try:
            return await self.request("GET", path, params=params)
        except ApiError as exc:
            if exc.status in (403, 404):
                return None
            raise

    async def watch(self, path: str, params: Mapping[str, str]) -> AsyncIterator[Obj]:
        """Watch events (``{"type", "object"}``) until the server ends the stream."""
        query = {**params, "watch": "1", "allowWatchBookmarks": "true"}
        async with self._http().get(
            self.url + path,
            params=query,
            timeout=aiohttp.ClientTimeout(total=None, sock_read=None),
        ) as response:
            if response.status >= 400:
                raise ApiError(response.status, await response.text())
            while True:
                line = await response.content.readline()
                if not line:
                    return
                if line.strip():
                    yield json.loads(line)


async def list_and_watch(
    api: Api, path: str, params: Mapping[str, str], on_list: Any, on_event: Any
) -> None:
    """List, hand the items to ``on_list``, then hand each watch event to ``on_event``;
    relist when the watch ends or its version is gone (410), forever."""
    while True:
        try:
            listed = await api.request("GET", path, params=params)
            on_list(listed.get("items") or [])
            version = listed["metadata"]["resourceVersion"]
            async for event in api.watch(path, {**params, "resourceVersion": version}):
                if event["type"] == "ERROR":
                    break
                if event["type"] != "BOOKMARK":
                    on_event(event["type"], event["object"])
        except (TimeoutError, aiohttp.ClientError, ApiError, ValueError) as exc:
            log.warning("watch %s: %s; relisting", path, exc)
            await asyncio.sleep(1.0)
