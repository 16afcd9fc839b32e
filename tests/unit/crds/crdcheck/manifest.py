"""Static checks of a CRD manifest: what the API server would refuse, and house rules.

:func:`manifest_errors` validates the CustomResourceDefinition object itself against
the Kubernetes OpenAPI schemas (``kubernetes-validate``; the CRD is a built-in kind).
:func:`lint` then checks what that schema cannot see:

* structural schema: every node has a ``type`` (unless it preserves unknown fields or
  is int-or-string), no node has both ``properties`` and ``additionalProperties``,
  root ``metadata`` restricts only ``name`` / ``generateName``;
* every default is pruned (declares no unknown field) and, with nested defaults
  applied, passes the schema and the CEL rules at its location;
* ``listType: map`` keys are required or defaulted;
* every CEL ``rule`` and ``messageExpression`` compiles, every ``self.a.b`` field
  reference and every ``fieldPath`` resolves in the schema, every ``reason`` is known;
* CEL cost: every string a rule reads has ``maxLength`` (or an enum) and every list
  or map a rule iterates has ``maxItems`` / ``maxProperties``, so the API server's
  static cost estimate stays small (it is not computed here);
* printer columns point at declared fields of a matching type;
* house rule: every field has a description (root ``metadata`` excepted: the API
  server forbids one there).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from typing import Any

import kubernetes_validate

from cjob_operator.admission import cel, structural
from cjob_operator.admission.structural import Schema


def manifest_errors(crd: Mapping[str, Any], kubernetes_version: str = "1.30") -> list[str]:
    """Errors of the CRD object against the built-in schema (strict: no unknown fields)."""
    try:
        kubernetes_validate.validate(dict(crd), kubernetes_version, strict=True)
    except kubernetes_validate.ValidationError as error:
        where = ".".join(str(p) for p in error.path) or "<root>"
        return [f"{where}: {error.message}"]
    return []


def iter_schema(schema: Schema, path: str = "") -> Iterator[tuple[str, Schema]]:
    """Every schema node with a readable location (``spec.sparkConf[*]``, ``x[*].y``)."""
    yield path or "<root>", schema
    for name, sub in (schema.get("properties") or {}).items():
        yield from iter_schema(sub, f"{path}.{name}" if path else name)
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        yield from iter_schema(extra, f"{path}[*]")
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from iter_schema(items, f"{path}[*]")


def free_form_paths(schema: Schema) -> list[str]:
    """Locations that keep unknown fields (``x-kubernetes-preserve-unknown-fields``)."""
    return [
        path
        for path, node in iter_schema(schema)
        if node.get("x-kubernetes-preserve-unknown-fields")
    ]


def lint(crd: Mapping[str, Any]) -> list[str]:
    """Every problem found in the CRD; empty when it is fine."""
    spec = crd["spec"]
    problems: list[str] = []
    expected_name = f"{spec['names']['plural']}.{spec['group']}"
    if crd["metadata"]["name"] != expected_name:
        problems.append(f"metadata.name must be {expected_name}")
    if sum(1 for v in spec["versions"] if v.get("storage")) != 1:
        problems.append("exactly one version must be the storage version")
    for version in spec["versions"]:
        schema = version["schema"]["openAPIV3Schema"]
        found = _structure(schema) + _defaults(schema) + _rules(schema) + _columns(version, schema)
        problems += [f"{version['name']}: {p}" for p in found]
    return problems


def _structure(schema: Schema) -> list[str]:
    problems: list[str] = []
    metadata = (schema.get("properties") or {}).get("metadata")
    if metadata is not None:
        extra = set(metadata) - {"type", "properties"}
        extra |= set(metadata.get("properties") or {}) - {"name", "generateName"}
        problems += [
            f"metadata: only name and generateName may be restricted, not {k}"
            for k in sorted(extra)
        ]
    for path, node in iter_schema(schema):
        in_metadata = path == "metadata" or path.startswith("metadata.")
        free = node.get("x-kubernetes-preserve-unknown-fields") or node.get(
            "x-kubernetes-int-or-string"
        )
        if "type" not in node and not free:
            problems.append(f"{path}: type is required in a structural schema")
        if "properties" in node and "additionalProperties" in node:
            problems.append(f"{path}: properties and additionalProperties are mutually exclusive")
        if not in_metadata and not str(node.get("description", "")).strip():
            problems.append(f"{path}: description is missing")
        if node.get("x-kubernetes-list-type") == "map":
            items = node.get("items") or {}
            for key in node.get("x-kubernetes-list-map-keys") or [f"{path}: map keys missing"]:
                sub = (items.get("properties") or {}).get(key, {})
                if key not in (items.get("required") or []) and "default" not in sub:
                    problems.append(f"{path}: list map key {key} must be required or defaulted")
    return problems


def _defaults(schema: Schema) -> list[str]:
    problems: list[str] = []
    for path, node in iter_schema(schema):
        if "default" not in node:
            continue
        value = copy.deepcopy(node["default"])
        unknown = structural.prune(value, node)
        problems += [f"{path}: default declares unknown field {u}" for u in unknown]
        structural.apply_defaults(value, node)
        found = structural.schema_errors(value, node) + cel.validate(node, value).errors
        problems += [f"{path}: default is invalid: {e}" for e in found]
    return problems


_STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_REFERENCE = re.compile(r"(?<![\w.])(?:self|oldSelf)((?:\.[A-Za-z_]\w*)+)(\s*\()?")


def field_references(expression: str) -> list[tuple[str, ...]]:
    """Field chains an expression reads from ``self`` / ``oldSelf`` (methods excluded).

    >>> field_references("has(self.a.b) && self.c.startsWith('self.x') && self.all(k, k)")
    [('a', 'b'), ('c',)]
    """
    chains = []
    for match in _REFERENCE.finditer(_STRING_LITERAL.sub("''", expression)):
        chain = tuple(match.group(1).split(".")[1:])
        if match.group(2):
            chain = chain[:-1]
        if chain:
            chains.append(chain)
    return chains


def _resolves(schema: Schema, chain: tuple[str | int, ...]) -> bool:
    node: Schema | None = schema
    for part in chain:
        if node is None:
            return False
        if node is structural.FREE_FORM:
            return True
        node = structural.child_schema(node, part)
    return node is not None


def _rules(schema: Schema) -> list[str]:
    problems: list[str] = []
    for path, node in iter_schema(schema):
        for rule in cel.rules_of(node):
            expressions = (("rule", rule.rule), ("messageExpression", rule.message_expression))
            for label, text in expressions:
                error = cel.compile_error(text) if text else None
                if error:
                    problems.append(f"{path}: {label} does not compile: {error}")
                for chain in field_references(text):
                    if not _resolves(node, chain):
                        problems.append(f"{path}: {label} reads undeclared field {'.'.join(chain)}")
            problems += [
                f"{path}: {problem}"
                for text in (rule.rule, rule.message_expression)
                for problem in _cost_risks(node, text)
            ]
            if rule.reason not in cel.REASONS:
                problems.append(f"{path}: unknown reason {rule.reason}")
            if rule.field_path and not _resolves(node, cel.parse_field_path(rule.field_path)):
                problems.append(f"{path}: fieldPath {rule.field_path} does not resolve")
            if not (rule.message or rule.message_expression):
                problems.append(f"{path}: rule {rule.rule!r} has no message")
            if "\n" in rule.message:
                problems.append(f"{path}: message must not contain line breaks")
    return problems


_MACRO_ON_SELF = re.compile(r"\bself\.(all|exists|exists_one|filter|map)\(")


def _unbounded_string(node: Schema | None) -> bool:
    return (
        node is not None
        and node.get("type") == "string"
        and "maxLength" not in node
        and "enum" not in node
    )


def _cost_risks(node: Schema, text: str) -> list[str]:
    """What would make the API server's static CEL cost estimate explode.

    The estimator assumes ~3 MB for a string without ``maxLength`` and ~the whole
    request for a list or map without ``maxItems`` / ``maxProperties``; a rule whose
    estimate exceeds the per-expression limit makes the CRD itself invalid.
    """
    if not text:
        return []
    risks: list[str] = []
    if _unbounded_string(node) and re.search(r"\bself\b", _STRING_LITERAL.sub("''", text)):
        risks.append("a rule reads this string, which needs maxLength")
    for chain in field_references(text):
        target: Schema | None = node
        for part in chain:
            target = structural.child_schema(target, part) if target is not None else None
        if _unbounded_string(target):
            risks.append(f"a rule reads {'.'.join(chain)}, which needs maxLength")
    if _MACRO_ON_SELF.search(text):
        bound = "maxItems" if node.get("type") == "array" else "maxProperties"
        if bound not in node:
            risks.append(f"a rule iterates over this field, which needs {bound}")
    return risks


_COLUMN_TYPES = {
    "integer": ("integer",),
    "number": ("number", "integer"),
    "string": ("string",),
    "boolean": ("boolean",),
    "date": ("string",),
}


def _columns(version: Mapping[str, Any], schema: Schema) -> list[str]:
    problems: list[str] = []
    for column in version.get("additionalPrinterColumns") or []:
        json_path, kind = column["jsonPath"], column["type"]
        if json_path == ".metadata.creationTimestamp":
            continue
        node: Schema | None = schema
        for part in json_path.lstrip(".").split("."):
            node = structural.child_schema(node, part) if node is not None else None
        if node is None:
            problems.append(f"column {column['name']}: {json_path} is not declared")
        elif node.get("type") not in _COLUMN_TYPES.get(kind, ()):
            problems.append(f"column {column['name']}: {json_path} is not of type {kind}")
        elif kind == "date" and node.get("format") != "date-time":
            problems.append(f"column {column['name']}: {json_path} is not a date-time")
    return problems
