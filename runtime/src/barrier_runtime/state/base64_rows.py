"""Base64 of many byte strings at once, vectorised with numpy (the value codec's ``bytes``).

The value codec writes ``bytes`` as base64 inside a small JSON object, and a
keyed state of ten million ``bytes`` values encoded one by one spends
microseconds on each: most of a full checkpoint. Here a column's strings are
grouped by length; the strings of one length are the rows of a ``uint8``
matrix, whose base64 is a handful of array operations (the standard alphabet,
``=`` padding, no line breaks: exactly :func:`base64.b64encode`). Decoding
is the inverse, and refuses (returns ``None``) on anything that is not
canonical, strict base64, so that the caller decodes one by one and reports
the error as it always does.

>>> import base64
>>> items = [b"", b"a", b"ab", b"abc", b"\\xff\\x00\\x10\\x80"]
>>> encoded = encode_all(items)
>>> encoded == [base64.b64encode(item) for item in items]
True
>>> decode_all(encoded) == items
True
>>> decode_all([b"YQ=="]), decode_all([b"Y==="]), decode_all([b"Y\\\\/A"]), decode_all([b"YQ="])
([b'a'], None, None, None)
"""

from __future__ import annotations

import binascii
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa

ALPHABET = np.frombuffer(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", dtype=np.uint8
)
_PAD = ord("=")

MAX_GROUPS = 64
"""More distinct lengths than this and the column is left to the one-by-one path."""

Rows = npt.NDArray[np.uint8]


def encode_rows(rows: Rows) -> Rows:
    """The base64 of every row of an ``(n, w)`` byte matrix, as an ``(n, 4 * ceil(w / 3))``
    matrix of ASCII.

    Rows padded with zero bytes to a multiple of three encode back to back with no padding
    between them, so one call of the C encoder does them all; the zero bytes' characters
    are then made ``=``.
    """
    n, width = rows.shape
    pad = -width % 3
    if pad:
        rows = np.concatenate([rows, np.zeros((n, pad), dtype=np.uint8)], axis=1)
    text = binascii.b2a_base64(np.ascontiguousarray(rows).reshape(-1).data, newline=False)
    out = np.frombuffer(text, dtype=np.uint8).reshape(n, (width + pad) // 3 * 4).copy()
    if pad:
        out[:, -pad:] = _PAD
    return out


def decode_rows(chars: Rows, pad: int) -> Rows | None:
    """The bytes of every row of an ``(n, 4k)`` matrix of base64 whose rows all end in ``pad``
    ``=``; ``None`` if a character is not of the alphabet."""
    n, width = chars.shape
    body = np.ascontiguousarray(chars)
    if pad:
        body = body.copy()
        body[:, width - pad :] = ALPHABET[0]
    try:
        data = binascii.a2b_base64(body.reshape(-1).data, strict_mode=True)
    except binascii.Error:
        return None
    out = np.frombuffer(data, dtype=np.uint8).reshape(n, width // 4 * 3)
    return out[:, : out.shape[1] - pad] if pad else out


def encode_array(items: Sequence[bytes]) -> pa.BinaryArray | None:
    """:func:`base64.b64encode` of every item, as an Arrow array (``None``: too many distinct
    lengths, or too large for one array)."""
    lengths = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    data = np.frombuffer(b"".join(items), dtype=np.uint8)
    groups = _by_length(lengths, data)
    if groups is None:
        return None
    return _assemble(len(items), [(members, encode_rows(rows)) for members, rows in groups])


def decode_array(column: pa.BinaryArray) -> pa.BinaryArray | None:
    """``base64.b64decode(item, validate=True)`` of every item of a column without nulls, or
    ``None`` if one is not strict, canonically padded base64 (or too many distinct lengths)."""
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int32)
    offsets = offsets[column.offset : column.offset + len(column) + 1]
    data = np.frombuffer(column.buffers()[2] or b"", dtype=np.uint8)
    groups = _by_length(
        np.diff(offsets).astype(np.int64), data, int(offsets[0]) if len(offsets) else 0
    )
    if groups is None:
        return None
    decoded: list[tuple[npt.NDArray[np.bool_], Rows]] = []
    for members, group in groups:
        if group.shape[1] % 4:
            return None
        chars, index = group, np.flatnonzero(members)
        for pad in (0, 1, 2):
            ends = _ending_in(chars, pad)
            if not ends.any():
                continue
            rows = decode_rows(chars[ends], pad)
            if rows is None:
                return None
            these = np.zeros(len(column), dtype=np.bool_)
            these[index[ends]] = True
            decoded.append((these, rows))
            chars, index = chars[~ends], index[~ends]
        if len(chars):
            return None  # three '=' or more
    return _assemble(len(column), decoded)


def encode_all(items: Sequence[bytes]) -> list[bytes]:
    """:func:`base64.b64encode` of every item (a list; for tests and small inputs)."""
    array = encode_array(items)
    if array is None:
        raise ValueError("too many distinct lengths")
    return list(array.to_pylist())


def decode_all(items: Sequence[bytes]) -> list[bytes] | None:
    """:func:`decode_array` of a list (``None`` if one item is not strict base64)."""
    array = decode_array(pa.array(items, type=pa.binary()))
    return None if array is None else list(array.to_pylist())


def _ending_in(chars: Rows, pad: int) -> npt.NDArray[np.bool_]:
    """Rows that end in exactly ``pad`` ``=`` (an empty row ends in none)."""
    n, width = chars.shape
    ends = np.ones(n, dtype=np.bool_)
    for i in (1, 2):
        is_pad = chars[:, width - i] == _PAD if width >= i else np.zeros(n, np.bool_)
        ends &= is_pad if i <= pad else ~is_pad
    return ends


def _by_length(
    lengths: npt.NDArray[np.int64], data: Rows, first: int = 0
) -> list[tuple[npt.NDArray[np.bool_], Rows]] | None:
    """The strings grouped by length: each group's members (a mask) and its rows as a
    matrix (``data[first:]`` holds the strings back to back)."""
    widths = np.unique(lengths)
    if len(widths) > MAX_GROUPS:
        return None
    data = data[first : first + int(lengths.sum())]
    if len(widths) == 1:
        return [(np.ones(len(lengths), np.bool_), data.reshape(len(lengths), int(widths[0])))]
    groups: list[tuple[npt.NDArray[np.bool_], Rows]] = []
    for width in widths.tolist():
        members = lengths == width
        rows = data[np.repeat(members, lengths)].reshape(int(members.sum()), width)
        groups.append((members, rows))
    return groups


def _assemble(n: int, groups: list[tuple[npt.NDArray[np.bool_], Rows]]) -> pa.BinaryArray | None:
    """One binary array of ``n`` strings from the rows of every group, at their members'
    positions."""
    lengths = np.zeros(n, dtype=np.int64)
    for members, rows in groups:
        lengths[members] = rows.shape[1]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    if offsets[-1] >= 2**31:
        return None
    if len(groups) == 1 and groups[0][1].shape[0] == n:
        data = np.ascontiguousarray(groups[0][1]).ravel()
    else:
        data = np.empty(int(offsets[-1]), dtype=np.uint8)
        for members, rows in groups:
            data[np.repeat(members, lengths)] = rows.ravel()
    buffers = [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
    array: pa.BinaryArray = pa.Array.from_buffers(pa.binary(), n, buffers)
    return array
