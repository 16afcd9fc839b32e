"""The ``scale`` subresource (``autoscaling/v1`` ``Scale``), as ``kubectl scale`` uses it.

A Scale is a view of its object's ``spec.replicas``, ``status.replicas`` and
selector. Reading it builds the view; writing it (update or any patch of the
view) changes only ``spec.replicas`` of the object behind it.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def view(obj: Obj) -> Obj:
    """The Scale of ``obj`` (a Deployment, or anything with ``spec.replicas``)."""
    meta = obj["metadata"]
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    labels = (spec.get("selector") or {}).get("matchLabels") or {}
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": int(spec.get("replicas", 1))},
        "status": {
            "replicas": int(status.get("replicas", 0)),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
        },
    }


def replicas_of(scale: Any) -> int:
    """``spec.replicas`` of a Scale written by a client (a 400 for anything else)."""
    spec = scale.get("spec") if isinstance(scale, dict) else None
    replicas = spec.get("replicas") if isinstance(spec, dict) else None
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise ValueError(f"spec.replicas must be a non-negative integer, got {replicas!r}")
    return replicas


def scaled(obj: Obj, replicas: int) -> Obj:
    """``obj`` with ``spec.replicas`` set (what is stored in place of ``obj``)."""
    return {**obj, "spec": {**(obj.get("spec") or {}), "replicas": replicas}}
