"""The resource verbs (create, update, patch, delete, deletecollection) on the store.

No HTTP here: the server parses the request, checks authorization and calls these.
They add what the API server does on each write: system fields (``uid``,
``generation``, ``resourceVersion`` preconditions), the status subresource split,
Secret ``stringData``, deletion propagation.
"""

from __future__ import annotations

import base64
import copy
from typing import Any, cast

from kube_local import controllers, defaults, errors, patches, resources, store

Obj = dict[str, Any]
_SYSTEM = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "namespace",
    "name",
)


def _body(obj: Any) -> Obj:
    if not isinstance(obj, dict):
        raise errors.bad_request("the request body must be a JSON object")
    return cast(Obj, obj)


def prepare_new(t: resources.ResourceType, obj: Any) -> Obj:
    new: Obj = copy.deepcopy(_body(obj))
    if "status" in t.subresources:
        new.pop("status", None)
    if t.key == ("", "pods"):
        new["status"] = {"phase": "Pending"}
    if t.key == ("", "secrets") and "stringData" in new:
        data = new.setdefault("data", {})
        for k, v in (new.pop("stringData") or {}).items():
            data[k] = base64.b64encode(str(v).encode()).decode()
    return new


def create(data: store.Store, t: resources.ResourceType, namespace: str, obj: Any) -> Obj:
    if t.namespaced:
        if not namespace:
            raise errors.bad_request("a namespace is required for this resource")
        if data.find(data.type_of("", "namespaces"), "", namespace) is None:
            raise errors.not_found("namespaces", "", namespace)
    new = prepare_new(t, obj)
    defaults.default(data, t, new)
    return data.create(t, namespace, new)


def _spec_of(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def write(
    data: store.Store, t: resources.ResourceType, current: Obj, new: Any, subresource: str
) -> Obj:
    """Store ``new`` in place of ``current`` keeping system fields and the status split."""
    new = copy.deepcopy(_body(new))
    cm, nm = current["metadata"], new.setdefault("metadata", {})
    wanted = nm.get("resourceVersion")
    if wanted and wanted != cm.get("resourceVersion"):
        raise errors.conflict(t.plural, t.group, cm["name"])
    if subresource == "status":
        result = copy.deepcopy(current)
        result["status"] = new.get("status")
        if result["status"] is None:
            del result["status"]
    else:
        result = new
        if "status" in t.subresources:
            if "status" in current:
                result["status"] = current["status"]
            else:
                result.pop("status", None)
        if t.key == ("", "secrets") and "stringData" in result:
            result = prepare_new(t, result)
    rm = result.setdefault("metadata", {})
    for field in _SYSTEM:
        if field in cm:
            rm[field] = cm[field]
        else:
            rm.pop(field, None)
    if cm.get("deletionTimestamp") is None and rm.get("deletionTimestamp"):
        del rm["deletionTimestamp"]
    result["apiVersion"], result["kind"] = current["apiVersion"], current["kind"]
    defaults.default(data, t, result)
    if _spec_of(result) != _spec_of(current):
        rm["generation"] = int(cm.get("generation", 1)) + 1
    if result == current:
        return current
    return data.replace(t, result)


def patch(
    data: store.Store,
    t: resources.ResourceType,
    namespace: str,
    name: str,
    content_type: str,
    body: Any,
    subresource: str,
) -> Obj:
    current = data.find(t, namespace, name)
    if current is None:
        if content_type.startswith("application/apply-patch") and not subresource:
            obj = _body(body)
            obj.setdefault("metadata", {})["name"] = name
            return create(data, t, namespace, obj)
        raise errors.not_found(t.plural, t.group, name)
    patched = patches.apply(content_type, current, body)
    return write(data, t, current, patched, subresource)


def delete(
    data: store.Store,
    t: resources.ResourceType,
    namespace: str,
    name: str,
    propagation: str | None,
    grace: int | None = None,
) -> Obj:
    current = data.get(t, namespace, name)
    uid = current["metadata"]["uid"]
    dependents = controllers.Controllers._dependents(data, uid)
    if propagation == "Orphan":
        for dt, dep in dependents:
            refs = dep["metadata"].get("ownerReferences") or []
            dep["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != uid]
            data.replace(dt, dep)
    elif propagation == "Foreground" and dependents:
        marked = copy.deepcopy(current)
        m = marked["metadata"]
        m["finalizers"] = [*(m.get("finalizers") or []), controllers.FOREGROUND]
        m["deletionTimestamp"], m["deletionGracePeriodSeconds"] = store.now(), 0
        return data.replace(t, marked)
    return data.remove(t, namespace, name, grace)


def list_kind(
    t: resources.ResourceType, version: str, items: list[Obj], resource_version: int
) -> Obj:
    return {
        "apiVersion": t.api_version(version),
        "kind": f"{t.kind}List",
        "metadata": {"resourceVersion": str(resource_version)},
        "items": items,
    }
