"""The patch formats clients send: JSON patch, merge patch, strategic merge, apply.

* ``application/json-patch+json``: RFC 6902 through the ``jsonpatch`` library.
* ``application/merge-patch+json``: RFC 7386.
* ``application/strategic-merge-patch+json``: simplified. Lists of objects whose
  items carry one of the usual merge keys (``name``, ``containerPort``, ``port``,
  ``mountPath``, ``devicePath``, ``ip``, ``type``) are merged item by item;
  ``$patch: delete|replace`` is honoured; ``$setElementOrder``, ``$retainKeys`` and
  ``$deleteFromPrimitiveList`` directives are dropped; other lists are replaced.
  Real servers take the merge keys from each type's Go struct tags.
* ``application/apply-patch+yaml`` (server-side apply): a merge patch of the applied
  configuration, creating the object when it is missing; there is no field
  ownership (``managedFields``) and so no apply conflicts.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import jsonpatch

from kube_local import errors

MERGE_KEYS = ("name", "containerPort", "port", "mountPath", "devicePath", "ip", "type")


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


def json_patch(target: Any, patch: Any) -> Any:
    try:
        return jsonpatch.apply_patch(target, patch)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        raise errors.invalid(f"the JSON patch could not be applied: {exc}") from exc


def _merge_key(items: list[Any]) -> str | None:
    if not items or not all(isinstance(i, Mapping) for i in items):
        return None
    for key in MERGE_KEYS:
        if all(key in i for i in items):
            return key
    return None


def _strategic_list(current: Any, patch: list[Any]) -> list[Any]:
    key = _merge_key(patch)
    if key is None or not isinstance(current, list) or _merge_key(current) != key:
        return [
            strategic_merge(None, item)
            for item in patch
            if not (isinstance(item, Mapping) and item.get("$patch") == "delete")
        ]
    result = [copy.deepcopy(item) for item in current]
    for item in patch:
        index = next((n for n, old in enumerate(result) if old.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if index is not None:
                result.pop(index)
        elif index is None:
            result.append(strategic_merge(None, item))
        else:
            result[index] = strategic_merge(result[index], item)
    return result


def strategic_merge(target: Any, patch: Any) -> Any:
    """The simplified strategic merge described in the module docstring."""
    if isinstance(patch, list):
        return _strategic_list(target, patch)
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        else:
            result[key] = strategic_merge(result.get(key), value)
    return result


def apply(content_type: str, current: Any, patch: Any) -> Any:
    """Apply ``patch`` of ``content_type`` to ``current`` (which it does not change)."""
    kind = content_type.split(";", maxsplit=1)[0].strip()
    if kind == "application/json-patch+json":
        return json_patch(copy.deepcopy(current), patch)
    if kind == "application/strategic-merge-patch+json":
        return strategic_merge(current, patch)
    if kind in (
        "application/merge-patch+json",
        "application/apply-patch+yaml",
        "application/apply-patch+cbor",
    ):
        return merge_patch(current, patch)
    raise errors.ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - "
        f"accepted media types include: application/json-patch+json, "
        f"application/merge-patch+json, "
        f"application/strategic-merge-patch+json, "
        f"application/apply-patch+yaml (got {kind})",
    )
