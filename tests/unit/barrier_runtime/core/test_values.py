"""The data-only value codec: exact round trips, registered types only, clear errors, no code."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import decimal
import enum
import math
import pickle
import zoneinfo
from typing import Any, NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from barrier_runtime import api, register_value_type
from barrier_runtime.core import values


@dataclasses.dataclass(frozen=True, slots=True)
class Totals:
    count: int
    amounts: tuple[float, ...] = ()
    last: str | None = None


class Pair(NamedTuple):
    left: Any
    right: Any


class Colour(enum.Enum):
    RED = "red"
    BLUE = 2


@dataclasses.dataclass
class WithDerived:
    base: int
    doubled: int = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.doubled = 2 * self.base


@dataclasses.dataclass
class NeverRegistered:
    x: int


for _cls in (Totals, Pair, Colour, WithDerived):
    register_value_type(_cls)


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (1 is not 1.0, True is not 1, nan is nan)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, decimal.Decimal):
        return str(a) == str(b)
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return (
            list(a) == list(b)
            and all(same(a[k], b[k]) for k in a)
            and all(type(x) is type(y) for x, y in zip(a, b, strict=True))
        )
    return bool(a == b)


def roundtrip(value: Any) -> Any:
    return values.decode(values.encode(value))


EXAMPLES = [
    None,
    True,
    False,
    0,
    1,
    -(2**63),
    2**64,
    -(2**5000) + 7,
    1.0,
    -0.0,
    float("inf"),
    float("-inf"),
    "",
    "é\u2603\ud800",
    b"\x00\xff",
    [],
    (),
    (1,),
    [1, (2, [3, {"a": (4,)}])],
    {},
    {"a": 1, "b": 2.5},
    {"b": 1, "a": 2},
    {1: "int", "1": "str", (1, 2): "tuple", None: "none", False: "bool"},
    {"\0t": [1, 2]},
    {"\0o": "looks like a tag"},
    {"\0o": 1, "x": 2},
    {1, 2, "x"},
    frozenset({(1, 2), b"x"}),
    dt.datetime(2024, 2, 29, 23, 59, 59, 999999),
    dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
    dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=-5, minutes=-30), "X")),
    dt.datetime(2021, 11, 7, 1, 30, fold=1, tzinfo=zoneinfo.ZoneInfo("America/New_York")),
    dt.date(1, 1, 1),
    dt.time(12, 30, 1, 5, tzinfo=dt.timezone(dt.timedelta(hours=2))),
    dt.timedelta(days=-3, seconds=5, microseconds=7),
    decimal.Decimal("1.10"),
    decimal.Decimal("-0"),
    decimal.Decimal("NaN"),
    decimal.Decimal("1E+999"),
    Totals(3, (1.5, 2.0), "x"),
    Pair(1, ("a", Totals(0))),
    Colour.RED,
    Colour.BLUE,
    {"state": [Colour.BLUE, Pair(None, b"")]},
]


@pytest.mark.parametrize("value", EXAMPLES, ids=repr)
def test_every_supported_value_comes_back_exactly(value: Any) -> None:
    assert same(roundtrip(value), value)


def test_nan_and_time_zones_come_back_with_their_identity() -> None:
    assert math.isnan(roundtrip(float("nan")))
    ny = roundtrip(
        dt.datetime(2021, 11, 7, 1, 30, fold=1, tzinfo=zoneinfo.ZoneInfo("America/New_York"))
    )
    assert ny.tzinfo is zoneinfo.ZoneInfo("America/New_York") and ny.fold == 1
    named = roundtrip(dt.timezone(dt.timedelta(hours=1), "CET"))
    assert named.tzname(None) == "CET"
    assert roundtrip(dt.UTC).tzname(None) == "UTC"


def test_dataclass_fields_not_in_init_are_restored() -> None:
    value = WithDerived(4)
    value.doubled = 9  # state after construction, not recomputed
    assert roundtrip(value).doubled == 9


def test_register_value_type_is_on_the_public_surface_and_works_as_a_decorator() -> None:
    assert api.register_value_type is register_value_type

    @register_value_type
    @dataclasses.dataclass(frozen=True)
    class Local:
        v: int

    assert roundtrip(Local(1)) == Local(1)


def test_encoding_an_unsupported_type_names_it_and_says_what_to_do() -> None:
    with pytest.raises(values.UnencodableValueError, match=r"NeverRegistered.*register_value_type"):
        values.encode({"k": [NeverRegistered(1)]})
    for unsupported in (bytearray(b"x"), object(), 1j, range(3)):
        with pytest.raises(values.UnencodableValueError, match=type(unsupported).__name__):
            values.encode(unsupported)


def test_register_refuses_classes_it_could_not_rebuild_and_name_clashes() -> None:
    class Plain:
        pass

    with pytest.raises(TypeError, match="dataclass, NamedTuple or Enum"):
        register_value_type(Plain)
    registry = values.Registry()
    registry.register(Totals, name="shared")
    with pytest.raises(ValueError, match="already taken"):
        registry.register(Pair, name="shared")


def test_decoding_an_unregistered_name_is_a_clear_error() -> None:
    registry = values.Registry()
    registry.register(NeverRegistered, name="x.Never")
    data = values.encode(NeverRegistered(1), registry)
    with pytest.raises(values.UnknownValueTypeError, match=r"'x.Never'.*register_value_type"):
        values.decode(data)  # the default registry does not know it


def test_decode_builds_only_plain_values_from_anything_else() -> None:
    class Boom:
        def __reduce__(self) -> Any:
            return (print, ("pwned",))

    for data in (
        pickle.dumps(Boom()),
        pickle.dumps({"a": 1}),
        b"",
        b"[1,2",
        b"[1] [2]",
        b'{"\\u0000o":["os.system",{}]}',
        b'{"\\u0000o":["barrier_runtime.core.values.Registry",{}]}',
        b'{"\\u0000t":"abc"}',
        b'{"\\u0000d":[[[1],2]]}',
        b'{"\\u0000D":[1,2]}',
        b'{"\\u0000Z":"../../etc/passwd"}',
        b'{"\\u0000e":["tests.Colour","green"]}',
        "ü".encode(),
    ):
        with pytest.raises(values.ValueDecodeError):
            values.decode(data)


def test_a_field_the_class_does_not_have_is_refused() -> None:
    data = values.encode(Totals(1)).replace(b'"last"', b'"evil"')
    with pytest.raises(values.ValueDecodeError, match="evil"):
        values.decode(data)


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**60, max_value=2**3000)
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary()
    | st.decimals(allow_nan=False)
    | st.datetimes(timezones=st.none() | st.timezones())
    | st.dates()
    | st.times()
    | st.timedeltas()
)
hashables = st.recursive(
    scalars, lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3), max_leaves=8
)
value_trees = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(st.text(), inner, max_size=4)
        | st.dictionaries(hashables, inner, max_size=4)
        | st.sets(hashables, max_size=4)
        | st.builds(
            Totals,
            st.integers(),
            st.lists(st.floats(allow_nan=False)).map(tuple),
            st.none() | st.text(),
        )
        | st.builds(Pair, inner, inner)
        | st.sampled_from(Colour)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(value_trees)
def test_round_trips_are_exact(value: Any) -> None:
    assert same(roundtrip(value), value)


@settings(max_examples=200, deadline=None)
@given(value_trees, st.data())
def test_changed_bytes_never_build_anything_but_values(value: Any, data: st.DataObject) -> None:
    encoded = bytearray(values.encode(value))
    i = data.draw(st.integers(0, len(encoded) - 1))
    encoded[i] = data.draw(st.integers(0, 255))
    with contextlib.suppress(values.ValueDecodeError):  # or another plain value: fine
        values.decode(bytes(encoded))
