"""``docs/reference/crd.md`` from the CRD's ``openAPIV3Schema`` (``crds/``, the canonical copy).

Every field of every served version becomes one section named by its dotted
path (``spec.checkpointing.interval``; list items as ``spec.env[].name``, map
values as ``spec.sparkConf.<key>``) with its type, whether it is required, its
default, its constraints (enum, range, length, pattern, items, properties), its
CEL rules (``x-kubernetes-validations`` with message, message expression, field
path and reason) and its description. Each of ``metadata``, ``spec`` and
``status`` opens with a summary table linking to the sections.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from docs_gen import markdown as md

CRD_PATH = pathlib.Path("crds/checkpointedjobs.checkpointed.dev.yaml")
OUTPUT = pathlib.Path("docs/reference/crd.md")
SECTIONS = ("metadata", "spec", "status")
"""Top-level properties documented; ``apiVersion`` and ``kind`` are the usual ones."""

Schema = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Field:
    """One node of the schema, named by its dotted path."""

    path: str
    schema: Schema
    required: bool


def load(root: pathlib.Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((root / CRD_PATH).read_text(encoding="utf-8"))
    return loaded


def walk(path: str, schema: Schema, required: bool = False) -> Iterator[Field]:
    """``schema`` and everything below it, depth first, properties in file order."""
    yield Field(path, schema, required)
    needed = set(schema.get("required") or ())
    for name, child in (schema.get("properties") or {}).items():
        yield from walk(f"{path}.{name}", child, name in needed)
    items = schema.get("items")
    if isinstance(items, Mapping) and (items.get("properties") or items.get("items")):
        yield from walk(f"{path}[]", items)
    values = schema.get("additionalProperties")
    if isinstance(values, Mapping):
        yield from walk(f"{path}.<key>", values)


def type_of(schema: Schema) -> str:
    """``string (date-time)``, ``array of string``, ``map of string``, ``object (any fields)``."""
    kind = str(schema.get("type", "any"))
    fmt = schema.get("format")
    if kind == "array":
        items = schema.get("items") or {}
        kind = f"array of {type_of(items)}"
    elif kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
        kind = f"map of {type_of(schema['additionalProperties'])}"
    elif kind == "object" and schema.get("x-kubernetes-preserve-unknown-fields"):
        kind = "object (any fields)"
    return f"{kind} ({fmt})" if fmt else kind


def literal(value: Any) -> str:
    """A default or enum value as written in a manifest."""
    return value if isinstance(value, str) else json.dumps(value)


def constraints(field: Field) -> list[str]:
    """One short phrase per constraint of the field, in a fixed order."""
    s = field.schema
    out: list[str] = []
    if "enum" in s:
        out.append("one of " + ", ".join(md.code(literal(v)) for v in s["enum"]))
    if "minimum" in s:
        out.append(f"minimum {literal(s['minimum'])}")
    if "maximum" in s:
        out.append(f"maximum {literal(s['maximum'])}")
    for key, words in (("minLength", "minimum length"), ("maxLength", "maximum length")):
        if key in s:
            out.append(f"{words} {s[key]}")
    for noun in ("items", "properties"):
        out += counts(s, noun)
    if "pattern" in s:
        out.append(f"pattern {md.code(s['pattern'])}")
    if s.get("x-kubernetes-list-type") == "map":
        keys = ", ".join(md.code(k) for k in s.get("x-kubernetes-list-map-keys") or ())
        out.append(f"list keyed by {keys} (entries merge by key)")
    elif "x-kubernetes-list-type" in s:
        out.append(f"list type {md.code(s['x-kubernetes-list-type'])}")
    if s.get("nullable"):
        out.append("may be null")
    return out


def counts(schema: Schema, noun: str) -> list[str]:
    """``at most 64 items``, ``exactly 1 property``: the ``min``/``max`` of ``noun``.

    >>> counts({"minProperties": 1, "maxProperties": 1}, "properties")
    ['exactly 1 property']
    """
    key = noun.capitalize()
    low, high = schema.get(f"min{key}"), schema.get(f"max{key}")

    def phrase(n: int) -> str:
        one = {"items": "item", "properties": "property"}[noun]
        return f"{n} {one if n == 1 else noun}"

    if low is not None and low == high:
        return [f"exactly {phrase(low)}"]
    found = [] if low is None else [f"at least {phrase(low)}"]
    return found if high is None else [*found, f"at most {phrase(high)}"]


def rules(schema: Schema) -> list[str]:
    """The field's CEL validation rules as a numbered list, details as sub-items."""
    out: list[str] = []
    for number, rule in enumerate(schema.get("x-kubernetes-validations") or (), start=1):
        out.append(f"{number}. {md.code(' '.join(str(rule['rule']).split()))}")
        if "message" in rule:
            out.append(f"   - message: {md.text(str(rule['message']))}")
        if "messageExpression" in rule:
            expression = " ".join(str(rule["messageExpression"]).split())
            out.append(f"   - message expression: {md.code(expression)}")
        for key, label in (
            ("fieldPath", "field path"),
            ("reason", "reason"),
            ("optionalOldSelf", "optionalOldSelf"),
        ):
            if key in rule:
                out.append(f"   - {label}: {md.code(literal(rule[key]))}")
    return out


def heading(field: Field) -> str:
    """The section title of a field (list items get words: ``spec.env`` has its own)."""
    return f"{field.path} (each item)" if field.path.endswith("[]") else field.path


def section(field: Field) -> list[str]:
    """The ``### path`` section of one field."""
    s = field.schema
    facts = [md.code(type_of(s))]
    if field.required:
        facts.append("**required**")
    if "default" in s:
        facts.append(f"default {md.code(literal(s['default']))}")
    lines = [f"#### {md.text(heading(field))}", "", " · ".join(facts)]
    limits = constraints(field)
    if limits:
        lines += ["", "Constraints: " + "; ".join(limits) + "."]
    if s.get("description"):
        lines += ["", md.text(str(s["description"]))]
    cel = rules(s)
    if cel:
        lines += ["", "Validation rules (CEL, checked by the API server):", "", *cel]
    return [*lines, ""]


def summary(fields: list[Field]) -> list[str]:
    rows = []
    for f in fields:
        default = md.code(literal(f.schema["default"])) if "default" in f.schema else ""
        link = f"[{md.code(f.path)}](#{md.slug(heading(f))})"
        rows.append(
            (
                link,
                md.cell(md.code(type_of(f.schema))),
                "yes" if f.required else "",
                md.cell(default),
            )
        )
    return md.table(("field", "type", "required", "default"), rows)


def printer_columns(version: Schema) -> list[str]:
    columns = version.get("additionalPrinterColumns") or ()
    if not columns:
        return []
    rows = [
        (
            md.cell(c["name"]),
            md.code(c["jsonPath"]),
            c["type"],
            md.cell(md.text(c.get("description", ""))),
        )
        for c in columns
    ]
    return [
        "### Printer columns (`kubectl get cjob`)",
        "",
        *md.table(("column", "JSON path", "type", "description"), rows),
        "",
    ]


def render(crd: Mapping[str, Any]) -> str:
    spec = crd["spec"]
    names = spec["names"]
    kind = names["kind"]
    short = ", ".join(md.code(n) for n in names.get("shortNames", ()))
    lines = [
        *md.banner(str(CRD_PATH)),
        "",
        f"# {kind} reference",
        "",
        f"Every field of the `{kind}` custom resource (group `{spec['group']}`, plural "
        f"`{names['plural']}`, short names {short}, scope {spec['scope']}), generated from "
        f"its OpenAPI schema in `{CRD_PATH}`. "
        "Defaults are applied by the API server; CEL rules are checked by it at create and "
        "update (the operator re-checks every job it reads against the CRD it ships, "
        "`cjob_operator/admission`, and what it relies on, `cjob_operator/validate.py`). "
        "Tested against kube-apiserver v1.37.2 (`tests/integration/crds`): the CRD is "
        "accepted, CEL cost budget included, and one manifest per rule and constraint is "
        "refused with the messages shown here.",
        "",
    ]
    for version in spec["versions"]:
        schema = version["schema"]["openAPIV3Schema"]
        flags = [
            w
            for w, on in (
                ("served", version.get("served")),
                ("storage version", version.get("storage")),
            )
            if on
        ]
        lines += [
            f"## {spec['group']}/{version['name']}",
            "",
            f"This version is {' and '.join(flags) or 'neither served nor stored'}. "
            + md.text(str(schema.get("description", ""))),
            "",
        ]
        lines += printer_columns(version)
        needed = set(schema.get("required") or ())
        for top in SECTIONS:
            if top not in schema.get("properties", {}):
                continue
            fields = list(walk(top, schema["properties"][top], top in needed))
            lines += [f"### {top} fields", "", *summary(fields), ""]
            for field in fields:
                lines += section(field)
    return md.document(lines)


def generate(root: pathlib.Path) -> str:
    """The page for the CRD under ``root``."""
    return render(load(root))
