"""Label and field selectors, parsed once and matched against stored objects.

Label selectors follow the Kubernetes grammar: ``a=b``, ``a==b``, ``a!=b``,
``a in (x,y)``, ``a notin (x,y)``, ``a`` (exists) and ``!a`` (absent), joined by
commas (AND). Field selectors accept ``path=value``, ``path==value`` and
``path!=value``; unlike a real API server, any dotted path of the object is allowed
(a real server allows only a few fields per type, e.g. ``status.phase`` for pods).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from kube_local import errors

_REQUIREMENT = re.compile(
    r"^\s*(?P<neg>!)?\s*(?P<key>[A-Za-z0-9_./-]+)\s*"
    r"(?:(?P<op>==|=|!=)\s*(?P<value>[A-Za-z0-9_.-]*)"
    r"|\s+(?P<setop>in|notin)\s*\((?P<values>[^)]*)\))?\s*$"
)


@dataclasses.dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        return not present or value not in self.values  # "!=", "notin"


def _split(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p for p in parts if p.strip()]


def parse_labels(text: str | None) -> tuple[Requirement, ...]:
    reqs = []
    for part in _split(text or ""):
        match = _REQUIREMENT.match(part)
        if not match:
            raise errors.bad_request(f"unable to parse requirement: {part!r}")
        key = match["key"]
        if match["neg"]:
            if match["op"] or match["setop"]:
                raise errors.bad_request(f"unable to parse requirement: {part!r}")
            reqs.append(Requirement(key, "!", frozenset()))
        elif match["op"]:
            op = "!=" if match["op"] == "!=" else "="
            reqs.append(Requirement(key, op, frozenset({match["value"]})))
        elif match["setop"]:
            values = frozenset(v.strip() for v in match["values"].split(",") if v.strip())
            reqs.append(Requirement(key, match["setop"], values))
        else:
            reqs.append(Requirement(key, "exists", frozenset()))
    return tuple(reqs)


def parse_fields(text: str | None) -> tuple[tuple[str, bool, str], ...]:
    """``(path, equal, value)`` triples."""
    found = []
    for part in _split(text or ""):
        match = re.match(r"^\s*([A-Za-z0-9_.-]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if not match:
            raise errors.bad_request(f"invalid field selector: {part!r}")
        found.append((match[1], match[2] != "!=", match[3]))
    return tuple(found)


def field_value(obj: Mapping[str, Any], path: str) -> str:
    current: Any = obj
    for step in path.split("."):
        current = current.get(step) if isinstance(current, Mapping) else None
    if current is None:
        return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    return str(current)


@dataclasses.dataclass(frozen=True, slots=True)
class Selector:
    """Both selectors of a list or watch request."""

    labels: tuple[Requirement, ...] = ()
    fields: tuple[tuple[str, bool, str], ...] = ()

    @classmethod
    def parse(cls, label_selector: str | None, field_selector: str | None) -> Selector:
        return cls(parse_labels(label_selector), parse_fields(field_selector))

    def matches(self, obj: Mapping[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        if not all(r.matches(labels) for r in self.labels):
            return False
        return all((field_value(obj, path) == value) == equal for path, equal, value in self.fields)
