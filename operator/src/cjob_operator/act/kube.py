"""A small async JSON client for the Kubernetes API (paths in, dicts out).

It reuses the official client's configuration and authentication (in-cluster
service account, kubeconfig, exec plugins, token refresh) and runs the blocking
calls in a worker thread. Bodies are plain dicts, never generated models, so what
is sent is exactly what :mod:`cjob_operator.manifests` built.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import Mapping
from typing import Any

import kubernetes

from cjob_operator import API_VERSION, PLURAL

logger = logging.getLogger(__name__)

Obj = dict[str, Any]

_CORE_PLURALS = {
    "Pod": "pods",
    "Service": "services",
    "ConfigMap": "configmaps",
    "Secret": "secrets",
    "Event": "events",
}


class KubeError(Exception):
    """The API server refused a request; ``status`` is the HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"Kubernetes API error {status}: {message}")
        self.status = status


class NotFoundError(KubeError):
    pass


class ConflictError(KubeError):
    pass


def load_configuration(pool_size: int = 16) -> None:
    """Use the in-cluster service account, or the kubeconfig outside a cluster."""
    try:
        kubernetes.config.load_incluster_config()  # type: ignore[no-untyped-call]
    except kubernetes.config.ConfigException:
        kubernetes.config.load_kube_config()  # type: ignore[no-untyped-call]
    config = kubernetes.client.Configuration.get_default_copy()
    config.connection_pool_maxsize = pool_size
    kubernetes.client.Configuration.set_default(config)


def path_of(
    kind: str, namespace: str, name: str | None = None, subresource: str | None = None
) -> str:
    if kind in _CORE_PLURALS:
        path = f"/api/v1/namespaces/{namespace}/{_CORE_PLURALS[kind]}"
    elif kind == "CheckpointedJob":
        path = f"/apis/{API_VERSION}/namespaces/{namespace}/{PLURAL}"
    else:
        raise ValueError(f"unsupported kind {kind}")
    if name:
        path += f"/{name}"
    if subresource:
        path += f"/{subresource}"
    return path


class KubeClient:
    """Create/get/patch/delete namespaced objects as JSON."""

    def __init__(self, api_client: Any | None = None, timeout: float = 15.0) -> None:
        self._api = api_client or kubernetes.client.ApiClient()
        self._timeout = timeout

    def _request_sync(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Obj:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        m, url, hdrs, payload, _ = self._api.param_serialize(
            method=method,
            resource_path=path,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        response = self._api.call_api(
            m, url, header_params=hdrs, body=payload, _request_timeout=self._timeout
        )
        response.read()
        data = response.data or b""
        status = int(response.status)
        if status >= 400:
            message = _message(data)
            if status == 404:
                raise NotFoundError(status, message)
            if status == 409:
                raise ConflictError(status, message)
            raise KubeError(status, message)
        parsed = json.loads(data) if data else {}
        return parsed if isinstance(parsed, dict) else {}

    async def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Obj:
        return await asyncio.to_thread(self._request_sync, method, path, body, content_type)

    async def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        try:
            return await self.request("GET", path_of(kind, namespace, name))
        except NotFoundError:
            return None

    async def create(self, obj: Mapping[str, Any]) -> bool:
        """Create ``obj``; ``False`` if it already exists."""
        meta = obj["metadata"]
        try:
            await self.request("POST", path_of(obj["kind"], meta["namespace"]), dict(obj))
        except ConflictError:
            return False
        return True

    async def apply(self, obj: Mapping[str, Any]) -> None:
        """Create ``obj`` or merge-patch the existing one to match it."""
        if not await self.create(obj):
            meta = obj["metadata"]
            await self.patch(obj["kind"], meta["namespace"], meta["name"], dict(obj))

    async def patch(
        self,
        kind: str,
        namespace: str,
        name: str,
        patch: Mapping[str, Any],
        subresource: str | None = None,
    ) -> Obj:
        return await self.request(
            "PATCH",
            path_of(kind, namespace, name, subresource),
            dict(patch),
            "application/merge-patch+json",
        )

    async def delete(self, kind: str, namespace: str, name: str) -> bool:
        """Delete; ``False`` if it was already gone."""
        try:
            await self.request(
                "DELETE", path_of(kind, namespace, name), {"propagationPolicy": "Background"}
            )
        except NotFoundError:
            return False
        return True

    async def secret_value(self, namespace: str, name: str, key: str) -> str | None:
        """One decoded value of a Secret (never logged)."""
        secret = await self.get("Secret", namespace, name)
        if secret is None:
            return None
        if key in (secret.get("stringData") or {}):
            return str(secret["stringData"][key])
        raw = (secret.get("data") or {}).get(key)
        return None if raw is None else base64.b64decode(raw).decode()


def _message(data: bytes) -> str:
    try:
        doc = json.loads(data)
    except ValueError:
        return data[:200].decode(errors="replace")
    if isinstance(doc, dict):
        return str(doc.get("message") or doc.get("reason") or doc)[:300]
    return str(doc)[:300]
