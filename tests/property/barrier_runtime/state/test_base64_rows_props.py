"""The vectorised base64 of state columns equals the standard library's and the value
codec's, and refuses exactly what strict decoding refuses."""

from __future__ import annotations

import base64
import binascii

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from barrier_runtime.core import values
from barrier_runtime.state import base64_rows, value_columns

_B64_CHARS = st.sampled_from(
    [*b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", ord("-"), 10]
)
_TEXTS = st.lists(_B64_CHARS, max_size=12).map(bytes)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=60))
def test_encoding_equals_the_standard_library(items: list[bytes]) -> None:
    assert base64_rows.encode_all(items) == [base64.b64encode(item) for item in items]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=40), min_size=1, max_size=60))
def test_a_bytes_column_round_trips_through_the_codec(items: list[bytes]) -> None:
    column = value_columns.encode_column(items)
    assert column.to_pylist() == [values.encode(item) for item in items]
    assert value_columns.decode_column(column) == items


@settings(max_examples=500, deadline=None)
@given(st.lists(_TEXTS, min_size=1, max_size=8))
def test_decoding_accepts_exactly_what_strict_decoding_accepts(texts: list[bytes]) -> None:
    expected: list[bytes] | None = []
    for text in texts:
        try:
            expected.append(base64.b64decode(text, validate=True))  # type: ignore[union-attr]
        except binascii.Error:
            expected = None
            break
    assert base64_rows.decode_all(texts) == expected


def test_a_column_of_too_many_lengths_is_left_to_the_one_by_one_path() -> None:
    items = [b"x" * n for n in range(base64_rows.MAX_GROUPS + 1)]
    assert base64_rows.encode_array(items) is None
    column = value_columns.encode_column(items)
    assert value_columns.decode_column(column) == items


def test_a_sliced_column_is_decoded_from_its_own_offset() -> None:
    column = value_columns.encode_column([b"first", b"second", b"third"])
    assert value_columns.decode_column(column.slice(1)) == [b"second", b"third"]
    assert value_columns.decode_column(pa.chunked_array([column.slice(0, 1), column.slice(2)])) == [
        b"first",
        b"third",
    ]
