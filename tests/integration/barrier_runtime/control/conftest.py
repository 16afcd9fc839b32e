"""Helpers for the control API tests: a tiny HTTP client over loopback (urllib, no extras)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

import pytest


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    raw: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.raw)

    @property
    def text(self) -> str:
        return self.raw.decode()


class Client:
    """Speaks to one control API; ``token`` is sent as a bearer token unless overridden."""

    def __init__(self, url: str, token: str | None) -> None:
        self.url = url
        self.token = token

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        auth: str | None = "default",
        headers: dict[str, str] | None = None,
        timeout: float = 30.0,
    ) -> Reply:
        data = raw if raw is not None else None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if auth == "default" and self.token is not None:
            request.add_header("Authorization", f"Bearer {self.token}")
        elif auth not in (None, "default"):
            request.add_header("Authorization", auth)
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return Reply(response.status, dict(response.headers.items()), response.read())
        except urllib.error.HTTPError as error:
            with error:
                return Reply(error.code, dict(error.headers.items()), error.read())

    def get(self, path: str, **kwargs: Any) -> Reply:
        return self.call("GET", path, **kwargs)

    def post(self, path: str, body: Any = None, **kwargs: Any) -> Reply:
        return self.call("POST", path, body, **kwargs)


@pytest.fixture(scope="session")
def make_client() -> type[Client]:
    return Client
