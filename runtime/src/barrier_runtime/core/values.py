"""Python values as self-describing, data-only bytes (keyed state, record fallbacks, messages).

Nothing read from storage or the network is ever unpickled: whoever can write
to the bucket or reach a port must not be able to run code in a worker or the
driver. This codec is the replacement. Its bytes are a JSON document (ASCII,
compact) in which

* ``None``, ``bool``, ``str``, ``float`` (``NaN`` and ``Infinity`` included),
  ``int`` (up to 2000 bits; larger ones are tagged) and ``list`` are native JSON;
* a ``dict`` whose keys are all ``str`` is a native JSON object (insertion
  order kept); any other ``dict`` is tagged, with its keys encoded like values;
* every other value is a one-key object whose key is a tag starting with NUL:
  ``tuple``, ``set``, ``frozenset``, ``bytes`` (base64), ``datetime``,
  ``date``, ``time``, ``timedelta``, ``timezone``, ``ZoneInfo`` (by key),
  ``Decimal``, big ``int``, and instances of dataclasses, NamedTuples and
  Enums registered by name (:func:`register_value_type`).

Decoding only builds those types; a registered class is constructed through
its ``__init__`` (or its Enum lookup) from decoded fields, looked up by its
stable name, and an unknown name is a :class:`UnknownValueTypeError`. Round
trips are exact: a tuple stays a tuple, ``1`` an ``int``, ``True`` a ``bool``.

>>> decode(encode({"k": ("a", 1, 2.5, True), 7: frozenset({b"x"})}))
{'k': ('a', 1, 2.5, True), 7: frozenset({b'x'})}
>>> encode([1, "a", None])
b'[1,"a",null]'
>>> import dataclasses
>>> @dataclasses.dataclass(frozen=True)
... class Point:
...     x: int
...     y: int
>>> _ = register_value_type(Point, name="doc.Point")
>>> decode(encode(Point(1, 2)))
Point(x=1, y=2)
>>> encode(object())
Traceback (most recent call last):
...
barrier_runtime.core.values.UnencodableValueError: cannot encode a value of type builtins.object...
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import enum
import json
import json.encoder
import json.scanner
import zoneinfo
from collections.abc import Callable
from typing import Any, TypeVar

_T = TypeVar("_T", bound=type)

_BIG = 1 << 2000
"""Ints at least this large are tagged hex (JSON ints beyond ~640 digits may be refused)."""

T_DICT, T_TUPLE, T_SET, T_FROZENSET, T_BYTES = "\0d", "\0t", "\0s", "\0f", "\0b"
T_INT, T_DECIMAL, T_DATETIME, T_DATE, T_TIME = "\0i", "\0n", "\0D", "\0a", "\0T"
T_TIMEDELTA, T_TIMEZONE, T_ZONE, T_OBJECT, T_ENUM = "\0R", "\0z", "\0Z", "\0o", "\0e"

SUPPORTED = (
    "None, bool, int, float, str, bytes, list, tuple, dict, set, frozenset, datetime, date, "
    "time, timedelta, Decimal, and dataclasses, NamedTuples and Enums registered with "
    "barrier_runtime.register_value_type(cls)"
)


class UnencodableValueError(TypeError):
    """A value (or a part of it) is of a type the codec cannot represent."""


class ValueDecodeError(ValueError):
    """Bytes are not a value encoding (corrupt, truncated, tampered or another format)."""


class UnknownValueTypeError(ValueDecodeError):
    """The bytes name a registered type that this process has not registered."""


class Registry:
    """Classes that may be encoded and constructed on decode, each under a stable name."""

    def __init__(self) -> None:
        self._by_name: dict[str, type] = {}
        self._names: dict[type, str] = {}
        self._fields: dict[type, tuple[str, ...]] = {}
        decoder = json.JSONDecoder(object_hook=self._hook)
        self.scan: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(
            decoder  # type: ignore[arg-type]  # typeshed: make_scanner takes the decoder
        )

    def register(self, cls: _T, *, name: str | None = None) -> _T:
        """Allow ``cls`` (a dataclass, NamedTuple or Enum) in encoded values under ``name``."""
        if not isinstance(cls, type):
            raise TypeError(f"register_value_type takes a class, got {cls!r}")
        if issubclass(cls, enum.Enum):
            fields: tuple[str, ...] = ()
        elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
            fields = tuple(cls._fields)
        elif dataclasses.is_dataclass(cls):
            fields = tuple(f.name for f in dataclasses.fields(cls))
        else:
            raise TypeError(
                f"register_value_type takes a dataclass, NamedTuple or Enum, got {_qualname(cls)}"
            )
        name = name or _qualname(cls)
        known = self._by_name.get(name)
        if known is not None and known is not cls and _qualname(known) != _qualname(cls):
            raise ValueError(f"value type name {name!r} is already taken by {_qualname(known)}")
        if known is not None:
            self._names.pop(known, None)
        self._by_name[name] = cls
        self._names[cls] = name
        self._fields[cls] = fields
        return cls

    def name_of(self, cls: type) -> str | None:
        return self._names.get(cls)

    # -- decoding --------------------------------------------------------------------------

    def _hook(self, obj: dict[str, Any]) -> Any:
        if len(obj) != 1:
            return obj
        ((tag, body),) = obj.items()
        if tag == T_TUPLE and type(body) is list:
            return tuple(body)
        if tag in _CONSTRUCTED:
            return self._construct(tag, body)
        decoder = _DECODERS.get(tag)
        return obj if decoder is None else decoder(body)

    def _construct(self, tag: str, body: Any) -> Any:
        name, payload = body
        cls = self._by_name.get(name)
        if cls is None:
            raise UnknownValueTypeError(
                f"the value names type {name!r}, which is not registered in this process: "
                "register it with barrier_runtime.register_value_type before restoring"
            )
        if tag == T_ENUM:
            if not issubclass(cls, enum.Enum):
                raise ValueDecodeError(f"{name!r} is not an Enum")
            return cls(payload)
        if type(payload) is not dict:
            raise ValueDecodeError(f"fields of {name!r} must be an object")
        if issubclass(cls, enum.Enum):
            raise ValueDecodeError(f"{name!r} is an Enum, not a record type")
        unknown = set(payload) - set(self._fields[cls])
        if unknown:
            raise ValueDecodeError(f"{name!r} has no field(s) {sorted(unknown)}")
        if not dataclasses.is_dataclass(cls):
            return cls(**payload)
        init = {f.name for f in dataclasses.fields(cls) if f.init}
        value = cls(**{k: v for k, v in payload.items() if k in init})
        for k, v in payload.items():
            if k not in init:
                object.__setattr__(value, k, v)
        return value


REGISTRY = Registry()
"""The registry of user value types (keyed state, records)."""

_JSON_ENCODE = json.encoder.c_make_encoder(  # type: ignore[attr-defined]
    None, None, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, True
)
"""The C encoder of ``json`` (no circularity markers: the tree is built fresh each time)."""
_FLAT = frozenset({str, int, float, bool, type(None)})
_STR = frozenset({str})
_CONSTRUCTED = frozenset({T_OBJECT, T_ENUM})


def register_value_type(cls: _T, *, name: str | None = None) -> _T:
    """Allow instances of ``cls`` in keyed state and records; usable as a class decorator.

    ``cls`` must be a dataclass, a NamedTuple or an Enum. ``name`` (default
    ``module.QualName``) is what snapshots store: keep it stable across releases
    of the pipeline, or state written before cannot be read back. Register the
    class at import time of the pipeline module, so every worker has it.
    """
    return REGISTRY.register(cls, name=name)


def encode(value: Any, registry: Registry = REGISTRY) -> bytes:
    """The bytes of ``value``; :class:`UnencodableValueError` names a type it cannot hold."""
    tree = value if type(value) in _FLAT else _tree(value, registry)
    try:
        return "".join(_JSON_ENCODE(tree, 0)).encode("ascii")
    except ValueError:  # an int too long for JSON: tag the big ones
        return "".join(_JSON_ENCODE(_tag_big_ints(tree), 0)).encode("ascii")
    except RecursionError:
        raise UnencodableValueError(
            "cannot encode a value nested too deeply (or containing itself)"
        ) from None


def decode(data: bytes | bytearray | memoryview, registry: Registry = REGISTRY) -> Any:
    """The value ``data`` was encoded from; :class:`ValueDecodeError` if it is not an encoding."""
    try:
        text = str(data, "ascii")
        value, end = registry.scan(text, 0)
    except ValueDecodeError:
        raise
    except StopIteration:
        raise ValueDecodeError("not a value encoding: no value at the start") from None
    except RecursionError:
        raise ValueDecodeError("not a value encoding: nested too deeply") from None
    except (ValueError, TypeError, KeyError, LookupError, ArithmeticError) as exc:
        raise ValueDecodeError(f"not a value encoding: {exc}") from exc
    if end != len(text):
        raise ValueDecodeError(f"not a value encoding: trailing data at offset {end}")
    return value


def _tree(v: Any, reg: Registry) -> Any:
    """``v`` as a JSON-able tree (the encoding before ``json`` writes it out)."""
    kind = type(v)
    if kind in _FLAT:
        return v
    if kind is tuple:
        return {T_TUPLE: [x if type(x) in _FLAT else _tree(x, reg) for x in v]}
    if kind is list:
        return [x if type(x) in _FLAT else _tree(x, reg) for x in v]
    if kind is dict:
        if _STR.issuperset(map(type, v)) and (len(v) != 1 or next(iter(v)) not in _TAGS):
            return {k: x if type(x) in _FLAT else _tree(x, reg) for k, x in v.items()}
        return {T_DICT: [[_tree(k, reg), _tree(x, reg)] for k, x in v.items()]}
    encoder = _ENCODERS.get(kind)
    if encoder is not None:
        return encoder(v, reg)
    name = reg.name_of(kind)
    if name is None:
        raise UnencodableValueError(
            f"cannot encode a value of type {_qualname(kind)}: state and records may hold "
            f"{SUPPORTED}"
        )
    if isinstance(v, enum.Enum):
        return {T_ENUM: [name, _tree(v.value, reg)]}
    return {T_OBJECT: [name, {f: _tree(getattr(v, f), reg) for f in reg._fields[kind]}]}


def _tag_big_ints(tree: Any) -> Any:
    """``tree`` with every int of at least 2000 bits replaced by its tagged hex form."""
    kind = type(tree)
    if kind is int:
        return tree if -_BIG < tree < _BIG else {T_INT: format(tree, "x")}
    if kind is list:
        return [_tag_big_ints(x) for x in tree]
    if kind is dict:
        return {k: _tag_big_ints(x) for k, x in tree.items()}
    return tree


def _tz(tz: dt.tzinfo | None, reg: Registry) -> Any:
    if tz is None:
        return None
    if type(tz) is zoneinfo.ZoneInfo and tz.key:
        return {T_ZONE: tz.key}
    if type(tz) is dt.timezone:
        offset = tz.utcoffset(None)
        plain = dt.timezone(offset).tzname(None)
        name = tz.tzname(None)
        return {T_TIMEZONE: [_delta(offset), None if name == plain else name]}
    raise UnencodableValueError(
        f"cannot encode time zone {_qualname(type(tz))}: use datetime.timezone or zoneinfo.ZoneInfo"
    )


def _delta(d: dt.timedelta) -> list[int]:
    return [d.days, d.seconds, d.microseconds]


def _datetime(v: dt.datetime, reg: Registry) -> Any:
    fields = [v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond, v.fold]
    return {T_DATETIME: [*fields, _tz(v.tzinfo, reg)]}


def _time(v: dt.time, reg: Registry) -> Any:
    return {T_TIME: [v.hour, v.minute, v.second, v.microsecond, v.fold, _tz(v.tzinfo, reg)]}


_ENCODERS: dict[type, Callable[[Any, Registry], Any]] = {
    bytes: lambda v, reg: {T_BYTES: base64.b64encode(v).decode("ascii")},
    set: lambda v, reg: {T_SET: [_tree(x, reg) for x in v]},
    frozenset: lambda v, reg: {T_FROZENSET: [_tree(x, reg) for x in v]},
    decimal.Decimal: lambda v, reg: {T_DECIMAL: str(v)},
    dt.datetime: _datetime,
    dt.date: lambda v, reg: {T_DATE: [v.year, v.month, v.day]},
    dt.time: _time,
    dt.timedelta: lambda v, reg: {T_TIMEDELTA: _delta(v)},
    dt.timezone: _tz,
    zoneinfo.ZoneInfo: _tz,
}


def _ints(body: Any, n: int) -> list[int]:
    if type(body) is not list or len(body) != n or any(type(x) is not int for x in body):
        raise ValueDecodeError(f"expected {n} integers, got {body!r:.80}")
    return body


def _tzinfo(tz: Any) -> dt.tzinfo | None:
    if tz is None or isinstance(tz, dt.tzinfo):
        return tz
    raise ValueDecodeError(f"expected a time zone, got {tz!r:.80}")


def _decode_datetime(body: Any) -> dt.datetime:
    y, mo, d, h, mi, s, us, fold = _ints(body[:8], 8)
    return dt.datetime(y, mo, d, h, mi, s, us, tzinfo=_tzinfo(body[8]), fold=fold)


def _decode_time(body: Any) -> dt.time:
    h, mi, s, us, fold = _ints(body[:5], 5)
    return dt.time(h, mi, s, us, tzinfo=_tzinfo(body[5]), fold=fold)


def _decode_timezone(body: Any) -> dt.timezone:
    offset = dt.timedelta(*_ints(body[0], 3))
    return dt.timezone(offset) if body[1] is None else dt.timezone(offset, str(body[1]))


def _decode_str(body: Any) -> str:
    if type(body) is not str:
        raise ValueDecodeError(f"expected a string, got {body!r:.80}")
    return body


def _list(body: Any) -> list[Any]:
    if type(body) is not list:
        raise ValueDecodeError(f"expected a list, got {body!r:.80}")
    return body


def _decode_dict(body: Any) -> dict[Any, Any]:
    return {k: v for k, v in _list(body)}


_DECODERS: dict[str, Callable[[Any], Any]] = {
    T_DICT: _decode_dict,
    T_TUPLE: lambda body: tuple(_list(body)),
    T_SET: lambda body: set(_list(body)),
    T_FROZENSET: lambda body: frozenset(_list(body)),
    T_BYTES: lambda body: base64.b64decode(_decode_str(body), validate=True),
    T_INT: lambda body: int(_decode_str(body), 16),
    T_DECIMAL: lambda body: decimal.Decimal(_decode_str(body)),
    T_DATETIME: _decode_datetime,
    T_DATE: lambda body: dt.date(*_ints(body, 3)),
    T_TIME: _decode_time,
    T_TIMEDELTA: lambda body: dt.timedelta(*_ints(body, 3)),
    T_TIMEZONE: _decode_timezone,
    T_ZONE: lambda body: zoneinfo.ZoneInfo(_decode_str(body)),
}
_TAGS = frozenset({*_DECODERS, T_OBJECT, T_ENUM})


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
