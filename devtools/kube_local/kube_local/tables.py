"""``meta.k8s.io/v1`` Table responses, as ``kubectl get`` asks for them.

A CRD's ``additionalPrinterColumns`` give its columns (after ``Name``); built-in
types get ``Name`` and ``Age`` only, and pods also ``Status`` (a real server has
per-type printers). Dates are shown as ages (``5s``, ``3m``, ``2d``) as the real
server does for CRD columns of type ``date``.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any

from kube_local import resources

_STEP = re.compile(r"\.([A-Za-z0-9_-]+)|\[(\d+)\]")


def json_path(obj: Any, path: str) -> Any:
    """Evaluate the simple JSONPath of a printer column (``.a.b[0].c``)."""
    current = obj
    for name, index in _STEP.findall(path.strip().strip("{}")):
        if name:
            current = current.get(name) if isinstance(current, Mapping) else None
        else:
            current = (
                current[int(index)]
                if isinstance(current, list) and int(index) < len(current)
                else None
            )
    return current


def age(timestamp: Any) -> str:
    """An RFC 3339 time (with or without fractions of a second) as an age.

    >>> age("2000-01-01T00:00:00.123Z").endswith("d")
    True
    """
    if not isinstance(timestamp, str):
        return "<unknown>" if timestamp is None else str(timestamp)
    try:
        then = datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return timestamp
    if then.tzinfo is None:
        then = then.replace(tzinfo=datetime.UTC)
    seconds = int((datetime.datetime.now(datetime.UTC) - then).total_seconds())
    if seconds < 120:
        return f"{max(seconds, 0)}s"
    minutes = seconds // 60
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    return f"{hours}h" if hours < 48 else f"{hours // 24}d"


def _columns(t: resources.ResourceType) -> list[Mapping[str, Any]]:
    if t.printer_columns:
        return list(t.printer_columns)
    extra = (
        [{"name": "Status", "type": "string", "jsonPath": ".status.phase"}]
        if t.key == ("", "pods")
        else []
    )
    return [*extra, {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]


def _cell(column: Mapping[str, Any], obj: Any) -> Any:
    value = json_path(obj, str(column.get("jsonPath", "")))
    if column.get("type") == "date":
        return age(value) if value is not None else None
    return value


def table(
    t: resources.ResourceType, objs: list[dict[str, Any]], version: str, include: str
) -> dict[str, Any]:
    columns = _columns(t)
    definitions = [
        {
            "name": "Name",
            "type": "string",
            "format": "name",
            "priority": 0,
            "description": "Name must be unique within a namespace.",
        }
    ]
    definitions += [
        {
            "name": c.get("name", ""),
            "type": c.get("type", "string"),
            "format": c.get("format", ""),
            "priority": c.get("priority", 0),
            "description": c.get("description", ""),
        }
        for c in columns
    ]
    rows = []
    for obj in objs:
        row: dict[str, Any] = {
            "cells": [obj["metadata"]["name"], *(_cell(c, obj) for c in columns)]
        }
        if include == "Object":
            row["object"] = obj
        elif include != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj["metadata"],
            }
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": version},
        "columnDefinitions": definitions,
        "rows": rows,
    }
