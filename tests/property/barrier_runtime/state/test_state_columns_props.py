"""Keyed state's column encoding gives, for any keys, exactly the value codec's bytes.

``encode_column`` takes fast paths for all-``int`` and all-``str`` columns, and
``decode_column`` for columns of canonical integers and of quoted plain strings.
Whatever the strings hold (quotes, backslashes, control characters, non-ASCII,
text that looks like a number or an encoding), both must agree with encoding
and decoding each value alone, byte for byte and value for value.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from barrier_runtime.core import values
from barrier_runtime.state import value_columns

TRICKY = st.sampled_from(['"', "\\", "\n", "\x7f", "é", "😀", "12", "-0", '"a"', "null", " "])
PRINTABLE = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=6)
TEXT = st.lists(st.one_of(TRICKY, PRINTABLE, st.text(max_size=3)), max_size=3).map("".join)
INTS = st.integers(min_value=-(2**70), max_value=2**70)
COLUMNS = st.one_of(
    st.lists(TEXT, max_size=20),
    st.lists(PRINTABLE, min_size=1, max_size=20),
    st.lists(INTS, max_size=20),
    st.lists(st.one_of(TEXT, INTS, st.booleans()), max_size=10),
)


@settings(max_examples=400, deadline=None)
@given(COLUMNS)
def test_encode_column_gives_the_codec_bytes_of_every_item(items: list[object]) -> None:
    column = value_columns.encode_column(items)
    assert column.to_pylist() == [values.encode(v) for v in items]


@settings(max_examples=400, deadline=None)
@given(COLUMNS)
def test_decode_column_gives_back_every_item(items: list[object]) -> None:
    decoded = value_columns.decode_column(value_columns.encode_column(items))
    assert decoded == items
    assert [type(v) for v in decoded] == [type(v) for v in items]  # "12" stays a str, 12 an int
