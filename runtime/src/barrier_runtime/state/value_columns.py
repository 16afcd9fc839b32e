"""Columns of value-codec bytes: keys and values of state objects, encoded and decoded
in bulk.

Every keyed state object stores its keys and values as the bytes of
:mod:`~barrier_runtime.core.values` (the data-only codec). Encoding and
decoding them one by one costs microseconds per row; the common columns (all
64-bit integers, all plain strings) take Arrow kernels that give exactly the
codec's bytes; so do all-``bytes`` columns, whose base64 is vectorised
(:mod:`~barrier_runtime.state.base64_rows`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from barrier_runtime.core import json_text, values
from barrier_runtime.state import base64_rows

_EMPTY_BYTES = values.encode(b"")
BYTES_PREFIX, BYTES_SUFFIX = _EMPTY_BYTES[:-2], _EMPTY_BYTES[-2:]
"""The codec's ``bytes`` is ``BYTES_PREFIX + base64 + BYTES_SUFFIX``."""


def int64s(items: list[Any]) -> npt.NDArray[np.int64] | None:
    """``items`` as an int64 array when every item is an ``int`` (not a ``bool``) that fits."""
    if not items or set(map(type, items)) != {int}:
        return None
    try:
        return np.fromiter(items, dtype=np.int64, count=len(items))
    except OverflowError:
        return None


def encode_column(items: list[Any], ints: npt.NDArray[np.int64] | None = None) -> pa.Array:
    """The value-codec bytes of every item (all of them encodable), as a binary array.

    All-``int`` items in 64 bits take Arrow's decimal formatting, which is the
    codec's encoding of an ``int``, and all-``str`` items that JSON writes as they are
    (printable ASCII without ``"`` or ``\\``) are quoted by Arrow. ``ints``: the
    items as int64, when the caller already converted them (saves a second pass).

    >>> ints = [0, -7, 2**63 - 1, -(2**63)]
    >>> encode_column(ints).to_pylist() == [values.encode(i) for i in ints]
    True
    >>> encode_column(["k1", "a b"]).to_pylist()
    [b'"k1"', b'"a b"']
    >>> items = [b"", b"\\x00\\xff"]
    >>> encode_column(items).to_pylist() == [values.encode(b) for b in items]
    True
    """
    if ints is None:
        ints = int64s(items)
    column: pa.Array | None = None
    if ints is not None:
        column = pa.array(ints, type=pa.int64())
    else:
        kinds = set(map(type, items))
        if kinds == {str}:
            column = pa.array(items, type=pa.string())
        elif kinds == {bytes}:
            encoded = _bytes_column(items)
            if encoded is not None:
                return encoded
    text = None if column is None else json_text.column_text(column)
    if text is not None:
        return pc.cast(text, pa.binary())
    encode = values.encode
    return pa.array([encode(v) for v in items], type=pa.binary())


def decode_column(column: pa.ChunkedArray | pa.Array) -> list[Any]:
    """The values of a column of value-codec bytes (``values.decode`` of each).

    A column of canonical decimal integers (as :func:`encode_column` writes
    them) is parsed by Arrow in one pass; anything else is decoded one by one.

    >>> decode_column(encode_column([3, -12, 0]))
    [3, -12, 0]
    >>> decode_column(encode_column(["k1", "a b"]))
    ['k1', 'a b']
    >>> decode_column(encode_column([b"a", b"bc"]))
    [b'a', b'bc']
    >>> decode_column(pa.array([b"[1]", b"2"]))  # not all ints: decoded one by one
    [[1], 2]
    """
    if len(column) and not column.null_count:
        decoded = _decode_bytes(column)
        if decoded is not None:
            return decoded
    text = _as_text(column) if len(column) and not column.null_count else None
    if text is not None:
        if pc.all(pc.match_substring_regex(text, json_text.QUOTED_PLAIN_STRING)).as_py():
            return list(pc.utf8_slice_codeunits(text, 1, -1).to_pylist())
        try:
            ints = pc.cast(text, pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        else:
            if pc.all(pc.equal(pc.cast(ints, pa.string()), text)).as_py():
                return list(ints.to_pylist())
    decode = values.decode
    return [decode(b) for b in column.to_pylist()]


def _as_text(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array | None:
    try:
        return column.cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None  # not UTF-8: not a column the fast paths read


def _bytes_column(items: list[Any]) -> pa.Array | None:
    """The codec bytes of all-``bytes`` items, or ``None`` if they do not vectorise."""
    b64 = base64_rows.encode_array(items)
    if b64 is None:
        return None
    joined: pa.Array = pc.binary_join_element_wise(BYTES_PREFIX, b64, BYTES_SUFFIX, b"")
    return joined


def _decode_bytes(column: pa.ChunkedArray | pa.Array) -> list[Any] | None:
    """The values of a column whose every item is the codec's ``bytes``, else ``None``."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if column.type != pa.binary():
        return None
    framed = pc.and_(
        pc.starts_with(column, BYTES_PREFIX.decode("ascii")),
        pc.ends_with(column, BYTES_SUFFIX.decode("ascii")),
    )
    if not pc.all(framed).as_py():
        return None
    inner = pc.binary_slice(column, len(BYTES_PREFIX), -len(BYTES_SUFFIX))
    decoded = base64_rows.decode_array(inner)
    return None if decoded is None else list(decoded.to_pylist())
