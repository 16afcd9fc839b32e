"""The structural half of custom-resource validation: prune, default, check the schema.

Follows the order the API server uses for a request body:

1. **prune** fields the schema does not declare (reported as unknown fields, which a
   strict client such as ``kubectl apply`` turns into an error) and ``null`` values of
   non-nullable fields;
2. **default**: a missing property with a ``default`` gets a deep copy of it, then
   defaulting recurses, so ``default: {}`` on an object applies its fields' defaults;
3. **validate** against the OpenAPI v3 schema, converted to JSON Schema draft 4 (its
   boolean ``exclusiveMinimum`` matches OpenAPI 3.0) with the ``x-kubernetes-*``
   extensions translated, and word every error like the API server.

``x-kubernetes-validations`` (CEL) are evaluated separately by :mod:`cjob_operator.admission.cel`.
"""

from __future__ import annotations

import copy
import datetime
import re
from collections.abc import Iterator, Mapping
from typing import Any

import jsonschema  # type: ignore[import-untyped]

from cjob_operator.admission import errors
from cjob_operator.admission.errors import ErrorType, FieldError, MapKey, Path

Schema = Mapping[str, Any]
FREE_FORM: Schema = {"x-kubernetes-preserve-unknown-fields": True}
ROOT_META_FIELDS = ("apiVersion", "kind", "metadata")

_PASS_THROUGH = (
    "type",
    "enum",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "pattern",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "required",
    "format",
)


def child_schema(schema: Schema, key: str | int) -> Schema | None:
    """Schema of ``key`` inside a node of ``schema``, or None if it is not declared."""
    if isinstance(key, int):
        items = schema.get("items")
        return items if isinstance(items, Mapping) else None
    properties = schema.get("properties") or {}
    if key in properties:
        sub: Schema = properties[key]
        return sub
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        return extra
    if extra is True or schema.get("x-kubernetes-preserve-unknown-fields"):
        return FREE_FORM
    return None


def path_part(schema: Schema, key: str | int) -> str | int:
    """``key`` as a path element: map keys of ``additionalProperties`` print as ``[key]``."""
    if isinstance(key, int) or key in (schema.get("properties") or {}):
        return key
    return MapKey(key) if isinstance(schema.get("additionalProperties"), Mapping) else key


def iter_nodes(schema: Schema, value: Any, path: Path = ()) -> Iterator[tuple[Schema, Any, Path]]:
    """Every (schema, value, path) below and including ``value``, parents first."""
    yield schema, value, path
    if isinstance(value, dict):
        for key, item in value.items():
            sub = child_schema(schema, key)
            if sub is not None:
                yield from iter_nodes(sub, item, (*path, path_part(schema, key)))
    elif isinstance(value, list):
        items = child_schema(schema, 0)
        if items is not None:
            for index, item in enumerate(value):
                yield from iter_nodes(items, item, (*path, index))


def prune(value: Any, schema: Schema, path: Path = (), *, root: bool = False) -> list[Path]:
    """Drop undeclared fields and non-nullable nulls in place; return the unknown paths."""
    unknown: list[Path] = []
    if isinstance(value, dict):
        for key in list(value):
            if root and key in ROOT_META_FIELDS:
                continue
            sub = child_schema(schema, key)
            if sub is None:
                unknown.append((*path, key))
                del value[key]
            elif value[key] is None and sub is not FREE_FORM and not sub.get("nullable", False):
                del value[key]
            else:
                unknown += prune(value[key], sub, (*path, path_part(schema, key)))
    elif isinstance(value, list):
        items = child_schema(schema, 0)
        if items is not None:
            for index, item in enumerate(value):
                unknown += prune(item, items, (*path, index))
    return unknown


def apply_defaults(value: Any, schema: Schema, *, root: bool = False) -> None:
    """Fill in missing defaulted properties in place, recursively (API-server order)."""
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key not in value and "default" in sub and not (root and key == "metadata"):
                value[key] = copy.deepcopy(sub["default"])
        for key, item in value.items():
            sub = child_schema(schema, key)
            if sub is not None and not (root and key == "metadata"):
                apply_defaults(item, sub)
    elif isinstance(value, list):
        items = child_schema(schema, 0)
        if items is not None:
            for item in value:
                apply_defaults(item, items)


def to_jsonschema(schema: Schema) -> dict[str, Any]:
    """Translate one OpenAPI v3 (Kubernetes flavour) schema node to JSON Schema draft 4."""
    out: dict[str, Any] = {key: schema[key] for key in _PASS_THROUGH if key in schema}
    if "properties" in schema:
        out["properties"] = {k: to_jsonschema(v) for k, v in schema["properties"].items()}
    if isinstance(schema.get("items"), Mapping):
        out["items"] = to_jsonschema(schema["items"])
    if isinstance(schema.get("additionalProperties"), Mapping):
        out["additionalProperties"] = to_jsonschema(schema["additionalProperties"])
    for key in ("allOf", "anyOf", "oneOf"):
        if key in schema:
            out[key] = [to_jsonschema(s) for s in schema[key]]
    if "not" in schema:
        out["not"] = to_jsonschema(schema["not"])
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("allOf", []).append({"anyOf": [{"type": "integer"}, {"type": "string"}]})
    if schema.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    return out


_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
FORMAT_CHECKER = jsonschema.FormatChecker(formats=())


def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not _RFC3339.match(value):
        return False
    try:
        datetime.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return True


def _is_int32(value: object) -> bool:
    return not isinstance(value, int) or -(2**31) <= value < 2**31


def _is_int64(value: object) -> bool:
    return not isinstance(value, int) or -(2**63) <= value < 2**63


FORMAT_CHECKER.checks("date-time")(_is_date_time)
FORMAT_CHECKER.checks("int32")(_is_int32)
FORMAT_CHECKER.checks("int64")(_is_int64)


def go_type(value: Any) -> str:
    """The JSON type name the API server prints for a value of the wrong type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


_STRING_CHECKS = ("maxLength", "minLength", "pattern")
"""Checked in this order; the API server reports only the first that fails for a string."""


def schema_errors(value: Any, schema: Schema, *, status_update: bool = False) -> list[FieldError]:
    """Every structural-schema violation of ``value``, worded like the API server.

    On an update of ``/status`` the server validates the status against its own schema:
    the detail names the field relative to ``status`` (``restarts.count in body``)."""
    validator = jsonschema.Draft4Validator(to_jsonschema(schema), format_checker=FORMAT_CHECKER)
    found: list[FieldError] = []
    string_failed: set[tuple[Any, ...]] = set()
    ordered = sorted(
        validator.iter_errors(value),
        key=lambda e: _STRING_CHECKS.index(e.validator) if e.validator in _STRING_CHECKS else -1,
    )
    for error in ordered:
        where = tuple(error.absolute_path)
        if error.validator in _STRING_CHECKS:
            if where in string_failed:
                continue
            string_failed.add(where)
        for field_error in _convert(error, schema, status_update):
            if field_error not in found:
                found.append(field_error)
    found += _list_duplicates(value, schema)
    return found


def _field_path(raw: Any) -> Path:
    """Schema errors name map keys with a dot (``spec.sparkConf.spark.x``), unlike rules."""
    return tuple(raw)


def _convert(
    error: jsonschema.ValidationError, schema: Schema, status_update: bool = False
) -> list[FieldError]:
    path = _field_path(error.absolute_path)
    relative = path[1:] if status_update and path[:1] == ("status",) else path
    body = errors.format_path(relative)
    kind, limit, value = error.validator, error.validator_value, error.instance
    if kind == "required":
        return [
            FieldError(ErrorType.REQUIRED, (*path, name))
            for name in limit
            if isinstance(value, dict) and name not in value
        ]
    if kind == "enum":
        supported = ", ".join(errors.format_value(v) for v in limit)
        return [FieldError(ErrorType.NOT_SUPPORTED, path, value, f"supported values: {supported}")]
    if kind == "type":
        expected = limit if isinstance(limit, str) else "/".join(limit)
        actual = go_type(value)
        detail = f"{body} in body must be of type {expected}: {errors.format_value(actual)}"
        return [FieldError(ErrorType.TYPE_INVALID, path, actual, detail)]
    if kind == "maxLength":
        return [FieldError(ErrorType.TOO_LONG, path, value, f"may not be more than {limit} bytes")]
    if kind in ("maxItems", "maxProperties"):
        detail = f"must have at most {limit} {'item' if limit == 1 else 'items'}"
        return [FieldError(ErrorType.TOO_MANY, path, len(value), detail)]
    if kind == "minProperties":
        detail = f"{body} in body should have at least {limit} properties"
        return [FieldError(ErrorType.INVALID, path, len(value), detail)]
    if kind == "format" and limit in ("int32", "int64"):
        return _integer_format(path, body, str(limit), value)
    if kind == "format":
        detail = f"{body} in body must be of type {limit}: {errors.format_value(value)}"
        return [FieldError(ErrorType.TYPE_INVALID, path, value, detail)]
    exclusive = error.schema.get(f"exclusive{str(kind).capitalize()}")
    detail = _DETAILS.get(str(kind), "{message}").format(
        body=body,
        limit=limit,
        message=error.message,
        quoted=errors.format_value(value),
        bound="than" if exclusive else "than or equal to",
    )
    shown = errors.OMITTED if isinstance(value, dict | list) else value
    return [FieldError(ErrorType.INVALID, path, shown, detail)]


_DETAILS = {
    "minimum": "{body} in body should be greater {bound} {limit}",
    "maximum": "{body} in body should be less {bound} {limit}",
    "pattern": "{body} in body should match '{limit}'",
    "minLength": "{body} in body should be at least {limit} chars long",
    "minItems": "{body} in body should have at least {limit} items",
    "minProperties": "{body} in body should have at least {limit} properties",
    "multipleOf": "{body} in body should be a multiple of {limit}",
}


def _integer_format(path: Path, body: str, limit: str, value: Any) -> list[FieldError]:
    """An integer outside its ``format``: a root-level cause that does not stop the rules;
    beyond int64 the JSON decoder already made the number a float (a type error)."""
    found = [
        FieldError(
            ErrorType.INVALID,
            (),
            "",
            f"Checked value must be of type integer with format {limit} in {body}",
        )
    ]
    if not _is_int64(value):
        detail = f'{body} in body must be of type {limit}: "float64"'
        found.insert(0, FieldError(ErrorType.TYPE_INVALID, path, "float64", detail))
    return found


def _list_duplicates(value: Any, schema: Schema) -> list[FieldError]:
    """Duplicates in ``x-kubernetes-list-type: set`` and ``map`` lists."""
    found: list[FieldError] = []
    for node, item, path in iter_nodes(schema, value):
        list_type = node.get("x-kubernetes-list-type")
        if not isinstance(item, list) or list_type not in ("set", "map"):
            continue
        keys = node.get("x-kubernetes-list-map-keys") or []
        seen: list[Any] = []
        for index, element in enumerate(item):
            identity = (
                {k: element.get(k) for k in keys}
                if list_type == "map" and isinstance(element, dict)
                else element
            )
            if identity in seen:
                found.append(FieldError(ErrorType.DUPLICATE, (*path, index), identity))
            else:
                seen.append(identity)
    return found
