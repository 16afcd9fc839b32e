"""kmock's Kubernetes emulator, adapted so kopf 1.45 and the operator run against it.

kmock stores objects as given; a real API server also assigns ``uid``,
``resourceVersion``, ``generation``, ``creationTimestamp`` and names from
``generateName``, answers 201/409/404/422, keeps ``status`` behind its
subresource, converts Secret ``stringData``, honours finalizers and garbage-collects
owned objects. This adapter does exactly that much for create/patch/delete and
leaves list/watch/get to kmock.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import datetime
import itertools
import json
import secrets
import uuid
from collections.abc import Mapping
from typing import Any

import aiohttp.web
import jsonpatch
import kmock

RESOURCES: dict[str, dict[str, Any]] = {
    "checkpointed.dev/v1alpha1/checkpointedjobs": {
        "kind": "CheckpointedJob",
        "singular": "checkpointedjob",
        "namespaced": True,
        "shortnames": {"cjob"},
        "subresources": {"status"},
    },
    "v1/pods": {"kind": "Pod", "singular": "pod", "namespaced": True, "subresources": {"status"}},
    "v1/services": {"kind": "Service", "singular": "service", "namespaced": True},
    "v1/configmaps": {"kind": "ConfigMap", "singular": "configmap", "namespaced": True},
    "v1/secrets": {"kind": "Secret", "singular": "secret", "namespaced": True},
    "v1/events": {"kind": "Event", "singular": "event", "namespaced": True},
    "v1/namespaces": {"kind": "Namespace", "singular": "namespace", "namespaced": False},
}
VERBS = {"list", "watch", "get", "create", "patch", "update", "delete"}
_MUTATING = {kmock.action.CREATE, kmock.action.UPDATE, kmock.action.DELETE}


class ApiFailure(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _key(resource: Any, namespace: str | None, name: str) -> kmock.ObjectKey:
    assert resource is not None
    return (resource, namespace, name)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeKubernetes(kmock.KubernetesEmulator):
    """The adapter. Create it, enter it and serve it with ``kmock.Server``."""

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self.__dict__["_versions"] = itertools.count(1000)
        for key, info in RESOURCES.items():
            self.resources[key] = kmock.ResourceInfo(verbs=VERBS, **info)

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        parts = raw_request.path.strip("/").split("/")
        if parts[:3] == ["api", "v1", "namespaces"] and len(parts) <= 4:
            return await self._namespaces(raw_request, parts[3] if len(parts) == 4 else None)
        return await super().__call__(raw_request)

    async def _namespaces(
        self, raw: aiohttp.web.BaseRequest, name: str | None
    ) -> aiohttp.web.StreamResponse:
        """kmock cannot parse ``/api/v1/namespaces``: serve namespaces here."""
        spaces: dict[str, Any] = self.__dict__.setdefault("_namespaces_store", {})
        if raw.method == "POST":
            obj = await raw.json()
            meta = obj.setdefault("metadata", {})
            if meta.get("name") in spaces:
                return aiohttp.web.json_response({"kind": "Status", "code": 409}, status=409)
            meta.update(
                uid=str(uuid.uuid4()),
                resourceVersion=self._next_version(),
                creationTimestamp=_now(),
            )
            spaces[meta["name"]] = obj
            return aiohttp.web.json_response(obj, status=201)
        if name is None and raw.query.get("watch") == "true":
            return await self._watch_namespaces(raw, spaces)
        if name is None:
            return aiohttp.web.json_response(
                {
                    "apiVersion": "v1",
                    "kind": "NamespaceList",
                    "metadata": {"resourceVersion": "1"},
                    "items": list(spaces.values()),
                }
            )
        if name in spaces:
            return aiohttp.web.json_response(spaces[name])
        return aiohttp.web.json_response({"kind": "Status", "code": 404}, status=404)

    @staticmethod
    async def _watch_namespaces(
        raw: aiohttp.web.BaseRequest, spaces: Mapping[str, Any]
    ) -> aiohttp.web.StreamResponse:
        """Stream the (static) namespaces, then hold the watch open until it times out."""
        response = aiohttp.web.StreamResponse()
        response.content_type = "application/json"
        await response.prepare(raw)
        for obj in list(spaces.values()):
            await response.write(json.dumps({"type": "ADDED", "object": obj}).encode() + b"\n")
        deadline = asyncio.get_running_loop().time() + float(raw.query.get("timeoutSeconds", 60))
        while asyncio.get_running_loop().time() < deadline:
            transport = raw.transport
            if transport is None or transport.is_closing():
                break
            await asyncio.sleep(0.5)
        return response

    def _next_version(self) -> str:
        return str(next(self.__dict__["_versions"]))

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        if request.resource is None or request.action not in _MUTATING:
            return await super()._handle(request)
        try:
            async with self._lock:
                status, body, events = self._mutate(request)
                for resource, event in events:
                    await self._buses[resource].put(event)
        except ApiFailure as failure:
            return aiohttp.web.json_response(
                {
                    "apiVersion": "v1",
                    "kind": "Status",
                    "status": "Failure",
                    "code": failure.status,
                    "reason": failure.reason,
                    "message": failure.message,
                },
                status=failure.status,
            )
        return aiohttp.web.json_response(body, status=status)

    # -- mutations -------------------------------------------------------------------

    def _mutate(self, request: kmock.Request) -> tuple[int, Any, list[tuple[Any, Any]]]:
        if request.action == kmock.action.CREATE:
            return self._create(request)
        if request.action == kmock.action.UPDATE:
            return self._update(request)
        return self._delete(request.resource, request.namespace, request.name or "")

    def _live(self, key: kmock.ObjectKey) -> dict[str, Any]:
        if key not in self._objects or self._objects[key].deleted:
            raise ApiFailure(404, "NotFound", f"{key[2]!r} not found")
        return copy.deepcopy(self._objects[key].raw)

    def refuse_creation(self, plural: str, message: str | None) -> None:
        """Answer 403 to creations of ``plural`` (``None`` stops refusing), like a quota."""
        refusals: dict[str, str] = self.__dict__.setdefault("_refusals", {})
        if message is None:
            refusals.pop(plural, None)
        else:
            refusals[plural] = message

    def _create(self, request: kmock.Request) -> tuple[int, Any, list[tuple[Any, Any]]]:
        refusal = self.__dict__.get("_refusals", {}).get(getattr(request.resource, "plural", ""))
        if refusal:
            raise ApiFailure(403, "Forbidden", refusal)
        obj = copy.deepcopy(request.data or {})
        meta = obj.setdefault("metadata", {})
        namespace = request.namespace or meta.get("namespace")
        if namespace:
            meta["namespace"] = namespace
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise ApiFailure(422, "Invalid", "metadata.name or generateName is required")
            meta["name"] = meta["generateName"] + secrets.token_hex(3)
        key = _key(request.resource, namespace, meta["name"])
        if key in self._objects and not self._objects[key].deleted:
            raise ApiFailure(409, "AlreadyExists", f"{meta['name']!r} already exists")
        meta.update(
            uid=str(uuid.uuid4()),
            creationTimestamp=_now(),
            resourceVersion=self._next_version(),
            generation=1,
        )
        if "stringData" in obj:
            data = obj.setdefault("data", {})
            for k, v in obj.pop("stringData").items():
                data[k] = base64.b64encode(str(v).encode()).decode()
        if key in self._objects:
            self._objects[key].create(obj)
        else:
            self._objects[key] = obj
        return 201, obj, [(request.resource, {"type": "ADDED", "object": obj})]

    def _update(self, request: kmock.Request) -> tuple[int, Any, list[tuple[Any, Any]]]:
        key = _key(request.resource, request.namespace, request.name or "")
        current = self._live(key)
        data = request.data
        if isinstance(data, list):
            try:
                patched = jsonpatch.apply_patch(current, data)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
                raise ApiFailure(422, "Invalid", f"JSON patch failed: {exc}") from exc
        else:
            patched = merge_patch(current, data or {})
        new = copy.deepcopy(current)
        if request.subresource == "status":
            new["status"] = patched.get("status")
        else:
            status = current.get("status")
            new = patched
            if status is not None:
                new["status"] = status
            else:
                new.pop("status", None)
        for field in ("uid", "creationTimestamp", "generation", "deletionTimestamp"):
            if field in current["metadata"]:
                new["metadata"][field] = current["metadata"][field]
        if new.get("spec") != current.get("spec"):
            new["metadata"]["generation"] = int(current["metadata"].get("generation", 1)) + 1
        new["metadata"]["resourceVersion"] = self._next_version()
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            self._objects[key].history.append(new)
            self._objects[key].delete()
            return 200, new, [(key[0], {"type": "DELETED", "object": new}), *self._gc(new)]
        self._objects[key].history.append(new)
        return 200, new, [(key[0], {"type": "MODIFIED", "object": new})]

    def _delete(
        self, resource: Any, namespace: str | None, name: str
    ) -> tuple[int, Any, list[tuple[Any, Any]]]:
        key = _key(resource, namespace, name)
        current = self._live(key)
        meta = current["metadata"]
        meta["resourceVersion"] = self._next_version()
        if meta.get("finalizers"):
            meta.setdefault("deletionTimestamp", _now())
            self._objects[key].history.append(current)
            return 200, current, [(resource, {"type": "MODIFIED", "object": current})]
        self._objects[key].delete()
        return (
            200,
            current,
            [(resource, {"type": "DELETED", "object": current}), *self._gc(current)],
        )

    def _gc(self, owner: Mapping[str, Any]) -> list[tuple[Any, Any]]:
        """Delete what ``owner`` owned (background propagation)."""
        uid = owner["metadata"].get("uid")
        events: list[tuple[Any, Any]] = []
        for (resource, namespace, name), obj in list(self._objects.items()):
            if obj.deleted:
                continue
            refs = obj.get("metadata", {}).get("ownerReferences") or []
            if any(ref.get("uid") == uid for ref in refs):
                events.extend(self._delete(resource, namespace, name)[2])
        return events

    # -- conveniences for tests (call on the server's loop) ----------------------------

    async def set_pod_phase(
        self, namespace: str, name: str, phase: str, exit_code: int | None = None
    ) -> bool:
        """Play the kubelet: set a pod's phase (and a terminated container state)."""
        resource = kmock.resource("v1/pods")
        async with self._lock:
            key = _key(resource, namespace, name)
            if key not in self._objects or self._objects[key].deleted:
                return False
            pod = copy.deepcopy(self._objects[key].raw)
            status = pod.setdefault("status", {})
            status["phase"] = phase
            status.setdefault("startTime", _now())
            if exit_code is not None:
                status["containerStatuses"] = [
                    {
                        "name": "driver",
                        "state": {
                            "terminated": {
                                "exitCode": exit_code,
                                "reason": "Error" if exit_code else "Completed",
                            }
                        },
                    }
                ]
            pod["metadata"]["resourceVersion"] = self._next_version()
            self._objects[key].history.append(pod)
            await self._buses[resource].put({"type": "MODIFIED", "object": pod})
        return True

    def find(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        for (resource, ns, n), obj in list(self._objects.items()):
            if resource.plural == plural and ns == namespace and n == name and not obj.deleted:
                found: dict[str, Any] = json.loads(json.dumps(obj.raw))
                return found
        return None

    def all_namespaces(self, plural: str) -> list[dict[str, Any]]:
        return [
            json.loads(json.dumps(obj.raw))
            for (resource, _, _), obj in list(self._objects.items())
            if resource.plural == plural and not obj.deleted
        ]

    def all(self, plural: str, namespace: str) -> list[dict[str, Any]]:
        return [
            json.loads(json.dumps(obj.raw))
            for (resource, ns, _), obj in list(self._objects.items())
            if resource.plural == plural and ns == namespace and not obj.deleted
        ]
