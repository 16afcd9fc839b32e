"""Field checks for the control API's documents (:mod:`barrier_runtime.control_document`).

Each check returns the field's value or raises :class:`ControlDocumentError` naming the
field (``where.key``) and what it should have been; :func:`json_object` checks a JSON object
field by field.

>>> json_object({"id": integer})({"id": "7"}, "body")
Traceback (most recent call last):
...
barrier_runtime.control_fields.ControlDocumentError: `body.id` must be an integer, got "7"
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping


class ControlDocumentError(ValueError):
    """A control API body is not what this version of the contract says; the message names why."""


Check = Callable[[object, str], object]


def integer(value: object, name: str) -> object:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ControlDocumentError(f"`{name}` must be an integer, got {json.dumps(value)}")
    return value


def number(value: object, name: str) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ControlDocumentError(f"`{name}` must be a number, got {json.dumps(value)}")
    return float(value)


def string(value: object, name: str) -> object:
    if not isinstance(value, str):
        raise ControlDocumentError(f"`{name}` must be a string, got {json.dumps(value)}")
    return value


def boolean(value: object, name: str) -> object:
    if not isinstance(value, bool):
        raise ControlDocumentError(f"`{name}` must be true or false, got {json.dumps(value)}")
    return value


def one_of(*names: str) -> Check:
    def check(value: object, name: str) -> object:
        if value not in names:
            allowed = ", ".join(json.dumps(n) for n in names)
            raise ControlDocumentError(
                f"`{name}` must be one of {allowed}, got {json.dumps(value)}"
            )
        return value

    return check


def optional_field(check: Check) -> Check:
    def optional(value: object, name: str) -> object:
        return None if value is None else check(value, name)

    return optional


def list_of(check: Check) -> Check:
    def each(value: object, name: str) -> object:
        if not isinstance(value, list):
            raise ControlDocumentError(f"`{name}` must be an array, got {json.dumps(value)}")
        return [check(item, f"{name}[{i}]") for i, item in enumerate(value)]

    return each


def json_object(
    fields: Mapping[str, Check],
    versioned: bool = False,
    optional: Mapping[str, Check] | None = None,
) -> Check:
    """``fields`` must all be there; ``optional`` ones are checked when they are."""

    def read(value: object, name: str) -> object:
        if not isinstance(value, dict):
            raise ControlDocumentError(f"`{name}` must be a JSON object, got {json_type(value)}")
        out: dict[str, object] = {"api_version": value["api_version"]} if versioned else {}
        for key, check in fields.items():
            if key not in value:
                raise ControlDocumentError(f"`{name}.{key}` is missing")
            out[key] = check(value[key], f"{name}.{key}")
        for key, check in (optional or {}).items():
            if key in value:
                out[key] = check(value[key], f"{name}.{key}")
        return out

    return read


def json_type(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    return "null" if value is None else json.dumps(value)
