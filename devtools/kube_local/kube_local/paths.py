"""Request paths of the API: discovery documents, OpenAPI, and resource paths parsed.

``/api``, ``/apis``, ``/apis/{group}[/{version}]`` and ``/openapi/v3/...`` answer what
the store serves (kubectl and helm read them first); every other path names a
resource collection, object or subresource, parsed into a :class:`Target`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kube_local import errors, resources
from kube_local import store as store_mod


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    """A parsed resource path."""

    type: resources.ResourceType
    version: str
    namespace: str
    name: str
    subresource: str


def discovery(store: store_mod.Store, path: str) -> dict[str, Any] | None:
    parts = path.strip("/").split("/")
    types = list(store.types.values())
    if parts == ["api"]:
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
    if parts == ["api", "v1"]:
        return resources.resource_list("v1", [t for t in types if not t.group])
    if parts == ["apis"]:
        return resources.group_list(types)
    if len(parts) == 2 and parts[0] == "apis":
        versions = [v for t in types if t.group == parts[1] for v in t.versions]
        if not versions:
            raise errors.ApiError(
                404, "NotFound", "the server could not find the requested resource"
            )
        return resources.group_doc(parts[1], list(dict.fromkeys(versions)))
    if len(parts) == 3 and parts[0] == "apis":
        served = [t for t in types if t.group == parts[1] and parts[2] in t.versions]
        if not served:
            raise errors.ApiError(
                404, "NotFound", "the server could not find the requested resource"
            )
        return resources.resource_list(f"{parts[1]}/{parts[2]}", served)
    if parts[:2] == ["openapi", "v3"]:
        return _openapi(parts[2:], types)
    if parts[0] == "openapi":
        raise errors.ApiError(404, "NotFound", "only /openapi/v3 is served")
    return None


def _openapi(parts: list[str], types: list[resources.ResourceType]) -> dict[str, Any]:
    if not parts:
        return resources.openapi_root(types)
    group, version = (
        ("", parts[1])
        if parts[0] == "api" and len(parts) == 2
        else ((parts[1], parts[2]) if len(parts) == 3 else ("", ""))
    )
    served = [t for t in types if t.group == group and version in t.versions]
    if not served:
        raise errors.ApiError(404, "NotFound", "no OpenAPI document for this path")
    return resources.openapi_group_version(group, version, served)


def parse(store: store_mod.Store, path: str) -> Target:
    parts = [p for p in path.strip("/").split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
    t = store.find_type(group, version, rest[0])
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if sub and sub not in t.subresources:
        raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
    return Target(t, version, namespace if t.namespaced else "", name, sub)
