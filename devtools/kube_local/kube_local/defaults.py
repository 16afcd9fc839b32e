"""Structural-schema defaulting for custom resources, as the real server does it.

A property missing from the object gets its schema ``default``; defaulting then
recurses into every object present (so a parent defaulted to ``{}`` gets its
children's defaults). Validation (types, patterns, CEL rules) is not done here: a
simplification of this emulator.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kube_local import resources, store


def apply_defaults(value: Any, schema: Mapping[str, Any]) -> Any:
    if isinstance(value, dict):
        for name, prop in (schema.get("properties") or {}).items():
            if name not in value and "default" in prop:
                value[name] = copy.deepcopy(prop["default"])
            if name in value:
                value[name] = apply_defaults(value[name], prop)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [apply_defaults(item, schema["items"]) for item in value]
    return value


def schema_for(data: store.Store, t: resources.ResourceType) -> Mapping[str, Any] | None:
    if not t.group or t.group.endswith("k8s.io") or "." not in t.group:
        return None
    crd = data.find(
        data.type_of("apiextensions.k8s.io", "customresourcedefinitions"),
        "",
        f"{t.plural}.{t.group}",
    )
    for version in (crd or {}).get("spec", {}).get("versions", []):
        if version.get("name") == t.versions[0]:
            found: Mapping[str, Any] | None = (version.get("schema") or {}).get("openAPIV3Schema")
            return found
    return None


def default(data: store.Store, t: resources.ResourceType, obj: dict[str, Any]) -> None:
    schema = schema_for(data, t)
    if schema is not None:
        for name in ("spec", "status"):
            prop = (schema.get("properties") or {}).get(name)
            if isinstance(prop, Mapping) and name in obj:
                obj[name] = apply_defaults(obj[name], prop)
