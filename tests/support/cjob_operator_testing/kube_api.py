"""A small JSON client of a real kube-apiserver for the tests' own side (paths in, dicts out).

:class:`Credentials` is one identity: the plane's CA plus a client certificate (the
admin, ``system:kube-scheduler``, ``system:node:<name>``) or a bearer token (a
ServiceAccount's, from TokenRequest). :class:`Api` answers synchronously (urllib),
for tests; :class:`AsyncApi` asynchronously (aiohttp), for the harness's node and
scheduler on its loop, with :meth:`AsyncApi.watch` following one collection.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
from kube_local import certs

MERGE = "application/merge-patch+json"


class ApiError(Exception):
    def __init__(self, status: int, body: Any) -> None:
        message = body.get("message") if isinstance(body, dict) else body
        super().__init__(f"{status}: {message}")
        self.status, self.body = status, body


@dataclasses.dataclass(frozen=True)
class Credentials:
    url: str
    ca: Path
    cert: Path | None = None
    key: Path | None = None
    token: str | None = None

    @classmethod
    def of_client(cls, url: str, authority: certs.Authority, client: certs.Client) -> Credentials:
        authority.client(client)
        return cls(
            url,
            authority.path("ca.crt"),
            authority.path(f"{client.file}.crt"),
            authority.path(f"{client.file}.key"),
        )

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca))
        if self.cert is not None and self.key is not None:
            context.load_cert_chain(self.cert, self.key)
        return context

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def kubeconfig(self, namespace: str) -> dict[str, Any]:
        user: dict[str, Any] = {"token": self.token} if self.token else {}
        if self.cert is not None and self.key is not None:
            user = {"client-certificate": str(self.cert), "client-key": str(self.key)}
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "test",
            "clusters": [
                {
                    "name": "test",
                    "cluster": {"server": self.url, "certificate-authority": str(self.ca)},
                }
            ],
            "users": [{"name": "test", "user": user}],
            "contexts": [
                {
                    "name": "test",
                    "context": {"cluster": "test", "user": "test", "namespace": namespace},
                }
            ],
        }


class Api:
    """Synchronous requests as one identity."""

    def __init__(self, credentials: Credentials) -> None:
        self.credentials = credentials
        self._context = credentials.ssl_context()

    def http(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": content_type, **self.credentials.headers()}
        req = urllib.request.Request(
            self.credentials.url + path, data=data, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(req, timeout=30, context=self._context) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            raw = err.read() or b"null"
            try:
                return err.code, json.loads(raw)
            except ValueError:
                return err.code, raw.decode(errors="replace")

    def call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        status, answer = self.http(method, path, body, content_type)
        if status >= 400:
            raise ApiError(status, answer)
        return answer

    def get(self, path: str) -> dict[str, Any] | None:
        status, body = self.http("GET", path)
        if status == 404:
            return None
        if status >= 400:
            raise ApiError(status, body)
        return dict(body)

    def items(self, path: str) -> list[dict[str, Any]]:
        return list(self.call("GET", path).get("items") or [])


class AsyncApi:
    """Asynchronous requests as one identity (open it on the loop that uses it)."""

    def __init__(self, credentials: Credentials) -> None:
        self.credentials = credentials
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> AsyncApi:
        connector = aiohttp.TCPConnector(ssl=self.credentials.ssl_context())
        self._session = aiohttp.ClientSession(
            connector=connector, headers=self.credentials.headers()
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        assert self._session is not None, "open the AsyncApi first"
        return self._session

    async def http(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        async with self.session.request(
            method,
            self.credentials.url + path,
            data=data,
            headers={"Content-Type": content_type},
            timeout=aiohttp.ClientTimeout(total=30),
        ) as resp:
            raw = await resp.read()
            try:
                return resp.status, json.loads(raw or b"null")
            except ValueError:
                return resp.status, raw.decode(errors="replace")

    async def call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        status, answer = await self.http(method, path, body, content_type)
        if status >= 400:
            raise ApiError(status, answer)
        return answer

    async def get(self, path: str) -> dict[str, Any] | None:
        status, body = await self.http("GET", path)
        if status == 404:
            return None
        if status >= 400:
            raise ApiError(status, body)
        return dict(body)

    async def watch(self, path: str, query: str = "") -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """``("ADDED"|"MODIFIED"|"DELETED", object)`` for ``path`` (a collection), for ever:
        first every existing object as ADDED, then the watch, listed anew when it expires."""
        sep = "&" if query else ""
        while True:
            listed = await self.call("GET", f"{path}?{query}")
            version = listed["metadata"]["resourceVersion"]
            for obj in listed.get("items") or []:
                yield "ADDED", obj
            url = (
                f"{self.credentials.url}{path}?{query}{sep}watch=1&resourceVersion={version}"
                "&allowWatchBookmarks=true&timeoutSeconds=300"
            )
            try:
                async with self.session.get(
                    url, timeout=aiohttp.ClientTimeout(total=None, sock_read=400)
                ) as resp:
                    if resp.status != 200:
                        await asyncio.sleep(0.5)
                        continue
                    async for line in resp.content:
                        if not line.strip():
                            continue
                        event = json.loads(line)
                        if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                            yield event["type"], event["object"]
                        elif event["type"] == "ERROR":
                            break  # expired: list anew
            except (aiohttp.ClientError, TimeoutError):
                await asyncio.sleep(0.2)
