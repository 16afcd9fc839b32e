"""Evaluate ``x-kubernetes-validations`` (CEL rules) the way the API server does.

Semantics reproduced:

* a rule runs at its schema location for every value present there, with ``self``
  bound to that value, typed by the schema (``integer`` -> int, ``number`` -> double,
  ``string`` with ``format: date-time`` -> timestamp, objects and maps -> map);
* a *transition rule* (one that mentions ``oldSelf``) runs only on update, and only
  where the old object has a value at the same location (objects by key, maps by
  key, ``listType: map`` items by their keys; other list items never correlate);
* on update, a failing non-transition rule at a location whose value did not change
  is *ratcheted*: reported as a warning, not an error (GA since Kubernetes 1.33);
* ``message`` / ``messageExpression`` (falling back to ``message`` when the
  expression fails), ``fieldPath`` (appended to the location) and ``reason``
  (FieldValueInvalid, FieldValueForbidden, FieldValueRequired, FieldValueDuplicate);
* a rule that fails to evaluate is reported as
  ``<error> evaluating rule: <rule>``, like the API server.

Not reproduced: type checking of rules at CRD creation and the cost budget (a real
kube-apiserver judges both when the CRD is applied: ``tests/integration/crds``),
``optionalOldSelf`` (such rules are skipped on create) and the Kubernetes CEL libraries
except the ``join`` and ``substring`` string functions, which cel-python lacks and are
provided here. A ``messageExpression`` that fails to evaluate falls back to ``message``
as on the server, so an unsupported function shows as the static message: the
agreement test of ``tests/integration/crds`` compares every message with the server's.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import celpy
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from cjob_operator.admission import structural
from cjob_operator.admission.errors import OMITTED, ErrorType, FieldError, MapKey, Path
from cjob_operator.admission.structural import FREE_FORM, Schema

REASONS = {
    "FieldValueInvalid": ErrorType.INVALID,
    "FieldValueForbidden": ErrorType.FORBIDDEN,
    "FieldValueRequired": ErrorType.REQUIRED,
    "FieldValueDuplicate": ErrorType.DUPLICATE,
}


def _join(values: celtypes.ListType, separator: celtypes.StringType | None = None) -> Any:
    """``list(string).join([separator])`` from the Kubernetes strings library."""
    return celtypes.StringType(str(separator or "").join(str(v) for v in values))


def _substring(
    text: celtypes.StringType, start: celtypes.IntType, end: celtypes.IntType | None = None
) -> Any:
    """``string.substring(start[, end])`` from the Kubernetes strings library (code points)."""
    stop = len(text) if end is None else int(end)
    if not 0 <= int(start) <= stop <= len(text):
        raise ValueError(f"substring: index out of range: {int(start)}, {stop}")
    return celtypes.StringType(str(text)[int(start) : stop])


EXTRA_FUNCTIONS: dict[str, Any] = {"join": _join, "substring": _substring}
_ENVIRONMENT = celpy.Environment()


class _Missing:
    """No value at a location (distinct from JSON null)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@functools.cache
def program(text: str) -> Any:
    """Compile a CEL expression once; raises ``CELParseError`` on syntax errors."""
    return _ENVIRONMENT.program(_ENVIRONMENT.compile(text), functions=EXTRA_FUNCTIONS)


def compile_error(text: str) -> str | None:
    """The parse error of a CEL expression, or None if it compiles."""
    try:
        program(text)
    except CELParseError as error:
        return str(error)
    return None


_FIELD_PATH_TOKEN = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\['((?:[^'\\]|\\.)*)'\]|\[(\d+)\]")


def parse_field_path(text: str) -> Path:
    """Parse a rule's ``fieldPath`` (``.a.b``, ``['key']``, ``[0]``) into path parts."""
    parts: list[str | int] = []
    position = 0
    while position < len(text):
        match = _FIELD_PATH_TOKEN.match(text, position)
        if match is None:
            raise ValueError(f"unsupported fieldPath {text!r} at {text[position:]!r}")
        name, key, index = match.groups()
        parts.append(name if name is not None else MapKey(key) if key is not None else int(index))
        position = match.end()
    return tuple(parts)


@dataclass(frozen=True, slots=True)
class Rule:
    """One entry of ``x-kubernetes-validations``."""

    rule: str
    message: str = ""
    message_expression: str = ""
    field_path: str = ""
    reason: str = "FieldValueInvalid"
    optional_old_self: bool = False

    @classmethod
    def from_schema(cls, raw: Mapping[str, Any]) -> Rule:
        return cls(
            rule=str(raw["rule"]).strip(),
            message=str(raw.get("message", "")).strip(),
            message_expression=str(raw.get("messageExpression", "")).strip(),
            field_path=str(raw.get("fieldPath", "")),
            reason=str(raw.get("reason", "FieldValueInvalid")),
            optional_old_self=bool(raw.get("optionalOldSelf", False)),
        )

    @property
    def is_transition(self) -> bool:
        return re.search(r"\boldSelf\b", self.rule) is not None


def rules_of(schema: Schema) -> list[Rule]:
    return [Rule.from_schema(raw) for raw in schema.get("x-kubernetes-validations") or []]


def to_cel(value: Any, schema: Schema) -> Any:
    """Convert a JSON value to the CEL value the API server binds for ``schema``."""
    if value is None:
        return None
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int) and schema.get("type") != "number":
        return celtypes.IntType(value)
    if isinstance(value, int | float):
        return celtypes.DoubleType(value)
    if isinstance(value, str):
        if schema.get("format") == "date-time":
            return celtypes.TimestampType(value)
        return celtypes.StringType(value)
    if isinstance(value, list):
        items = structural.child_schema(schema, 0) or FREE_FORM
        return celtypes.ListType([to_cel(v, items) for v in value])
    return celtypes.MapType(
        {
            celtypes.StringType(k): to_cel(v, structural.child_schema(schema, k) or FREE_FORM)
            for k, v in value.items()
        }
    )


@dataclass(slots=True)
class Outcome:
    """Rule failures: ``errors`` reject the request, ``warnings`` were ratcheted."""

    errors: list[FieldError] = field(default_factory=list)
    warnings: list[FieldError] = field(default_factory=list)


def validate(schema: Schema, new: Any, old: Any = MISSING, path: Path = ()) -> Outcome:
    """Evaluate every rule under ``schema`` against ``new`` (and ``old`` on update)."""
    outcome = Outcome()
    _walk(schema, new, old, path, outcome)
    return outcome


def _walk(schema: Schema, new: Any, old: Any, path: Path, outcome: Outcome) -> None:
    if new is None or new is MISSING:
        return
    for rule in rules_of(schema):
        _check(rule, schema, new, old, path, outcome)
    if isinstance(new, dict):
        for key, value in new.items():
            sub = structural.child_schema(schema, key)
            if sub is not None:
                old_value = old.get(key, MISSING) if isinstance(old, dict) else MISSING
                _walk(sub, value, old_value, (*path, structural.path_part(schema, key)), outcome)
    elif isinstance(new, list):
        items = structural.child_schema(schema, 0)
        if items is not None:
            for index, value in enumerate(new):
                _walk(items, value, correlate(schema, value, old), (*path, index), outcome)


def correlate(schema: Schema, item: Any, old: Any) -> Any:
    """The old list item matching ``item`` by its map keys (``listType: map`` only)."""
    keys = schema.get("x-kubernetes-list-map-keys") or []
    if schema.get("x-kubernetes-list-type") != "map" or not isinstance(old, list) or not keys:
        return MISSING
    if not isinstance(item, dict):
        return MISSING
    for candidate in old:
        if isinstance(candidate, dict) and all(candidate.get(k) == item.get(k) for k in keys):
            return candidate
    return MISSING


def _check(rule: Rule, schema: Schema, new: Any, old: Any, path: Path, outcome: Outcome) -> None:
    if rule.is_transition and old is MISSING:
        return
    activation = {"self": to_cel(new, schema)}
    if rule.is_transition:
        activation["oldSelf"] = to_cel(old, schema)
    shown = OMITTED if isinstance(new, dict | list) else new
    try:
        result = program(rule.rule).evaluate(activation)
    except CELEvalError as error:
        result = error
    if isinstance(result, CELEvalError):
        reason = result.args[0] if result.args else result
        detail = f"{reason} evaluating rule: {rule.rule}"
        outcome.errors.append(FieldError(ErrorType.INVALID, path, shown, detail))
        return
    if bool(result):
        return
    failure = FieldError(
        REASONS.get(rule.reason, ErrorType.INVALID),
        (*path, *parse_field_path(rule.field_path)),
        shown,
        _message(rule, activation),
    )
    ratcheted = not rule.is_transition and old is not MISSING and old == new
    (outcome.warnings if ratcheted else outcome.errors).append(failure)


def _message(rule: Rule, activation: dict[str, Any]) -> str:
    if rule.message_expression:
        try:
            text = program(rule.message_expression).evaluate(activation)
        except CELEvalError:
            text = None
        if isinstance(text, str) and text.strip():
            return str(text)
    return rule.message or f"failed rule: {rule.rule}"
