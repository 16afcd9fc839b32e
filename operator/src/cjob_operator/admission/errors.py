"""Field paths and field errors, worded like the Kubernetes API server.

The API server reports each problem as a ``field.Error``: a path such as
``spec.checkpointing.interval``, a type (``Invalid value``, ``Required value``,
``Unsupported value``, …), usually the offending value and a detail. ``str()``
of a :class:`FieldError` renders the same text ``kubectl`` shows, e.g.::

    spec.state: Unsupported value: "paused": supported values: "Running", "Suspended", …
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


class MapKey(str):
    """A key of a free-form map (``additionalProperties``), printed as ``[key]``."""

    __slots__ = ()


PathPart = str | int
Path = tuple[PathPart, ...]


class _Omitted(enum.Enum):
    """Marker for "no value printed" (objects and lists, like the API server)."""

    VALUE = "omitted"


OMITTED = _Omitted.VALUE


def format_path(path: Sequence[PathPart]) -> str:
    """Render a path the way ``k8s.io/apimachinery``'s ``field.Path`` does.

    >>> format_path(("spec", "sparkConf", MapKey("spark.master")))
    'spec.sparkConf[spark.master]'
    >>> format_path(("status", "conditions", 0, "type"))
    'status.conditions[0].type'
    >>> format_path(())
    '<nil>'
    """
    if not path:
        return "<nil>"
    out = ""
    for part in path:
        if isinstance(part, int | MapKey):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def format_value(value: Any) -> str:
    """Render a bad value like Go's ``field.Error`` (``%q`` strings, plain numbers).

    >>> format_value("30")
    '"30"'
    >>> format_value(None), format_value(True), format_value(0), format_value(0.5)
    ('null', 'true', '0', '0.5')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


class ErrorType(enum.Enum):
    """The ``field.ErrorType`` values this checker produces (value: the Go name)."""

    INVALID = "FieldValueInvalid"
    REQUIRED = "FieldValueRequired"
    NOT_SUPPORTED = "FieldValueNotSupported"
    FORBIDDEN = "FieldValueForbidden"
    TOO_LONG = "FieldValueTooLong"
    TOO_MANY = "FieldValueTooMany"
    DUPLICATE = "FieldValueDuplicate"
    TYPE_INVALID = "FieldValueTypeInvalid"  # printed as "Invalid value"; blocks CEL
    UNKNOWN_FIELD = "FieldValueUnknown"  # strict decoding error, raised before validation

    @property
    def text(self) -> str:
        """How the API server prints the type."""
        return _TEXT[self]


_TEXT = {
    ErrorType.INVALID: "Invalid value",
    ErrorType.REQUIRED: "Required value",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.TOO_LONG: "Too long",
    ErrorType.TOO_MANY: "Too many",
    ErrorType.DUPLICATE: "Duplicate value",
    ErrorType.TYPE_INVALID: "Invalid value",
    ErrorType.UNKNOWN_FIELD: "unknown field",
}

# Error types after which the API server skips every CEL rule (``hasBlockingErr``).
BLOCKING_TYPES = frozenset(
    {
        ErrorType.NOT_SUPPORTED,
        ErrorType.REQUIRED,
        ErrorType.TOO_LONG,
        ErrorType.TOO_MANY,
        ErrorType.TYPE_INVALID,
    }
)

CEL_SKIPPED_DETAIL = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


@dataclass(frozen=True, slots=True)
class FieldError:
    """One validation failure at one field path."""

    type: ErrorType
    path: Path
    value: Any = OMITTED
    detail: str = ""

    @property
    def field(self) -> str:
        return format_path(self.path)

    def body(self) -> str:
        """The text after ``<path>: `` (what ``StatusCause.message`` holds)."""
        head = self.type.text
        if self.type is ErrorType.UNKNOWN_FIELD:
            return head
        no_value = (ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG)
        if self.type not in no_value and self.value is not OMITTED:
            head = f"{head}: {format_value(self.value)}"
        return f"{head}: {self.detail}" if self.detail else head

    def __str__(self) -> str:
        if self.type is ErrorType.UNKNOWN_FIELD:
            return f'unknown field "{self.field}"'
        return f"{self.field}: {self.body()}"
