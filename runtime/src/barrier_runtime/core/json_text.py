"""Compact JSON text of Arrow columns, written by Arrow where it is exactly Python's text.

``json.dumps(value, separators=(",", ":"))`` writes an integer in decimal, a
bool as ``true`` or ``false``, and a string of printable ASCII without ``"``
or ``\\`` between quotes, unchanged. Arrow's casts and joins write the same
text a whole column at a time. Any other column (floats, nulls, strings that
JSON escapes, nested or dictionary types) gives ``None``, and the caller
encodes its values one by one.

>>> import pyarrow as pa
>>> batch = pa.record_batch({"key": [7, -1], "kind": ["buy", "a b"], "ok": [True, False]})
>>> json_lines(batch)
b'{"key":7,"kind":"buy","ok":true}\\n{"key":-1,"kind":"a b","ok":false}\\n'
>>> json_lines(pa.record_batch({"x": [1.5]})) is None  # floats: Python's repr decides
True
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_PLAIN_CHARS = r"[ !#-\[\]-~]*"
PLAIN_STRING = f"^{_PLAIN_CHARS}$"
"""Strings JSON writes between quotes as they are: printable ASCII except ``"`` and ``\\``
(an Arrow regex: RE2's ``$`` is the end of the text, not before a final newline)."""
QUOTED_PLAIN_STRING = f'^"{_PLAIN_CHARS}"$'
"""The JSON text of a string matching :data:`PLAIN_STRING`."""
_PLAIN_NAME = re.compile(_PLAIN_CHARS)


def column_text(column: pa.Array) -> pa.Array | None:
    """Each value's JSON text, or ``None`` if Arrow cannot write the column as ``json`` does."""
    if column.null_count:
        return None
    kind = column.type
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind):
        return pc.cast(column, pa.string())
    if pa.types.is_string(kind) and pc.all(pc.match_substring_regex(column, PLAIN_STRING)).as_py():
        return pc.binary_join_element_wise('"', column, '"', "")
    return None


def json_lines(batch: pa.RecordBatch) -> bytes | None:
    """Each row as ``json.dumps(row, separators=(",", ":"))`` and a newline, or ``None``.

    ``None`` when any column (or column name) is one :func:`column_text`
    leaves to Python, or when names repeat (a row dict keeps only one).
    """
    names = batch.schema.names
    if not names or len(set(names)) != len(names):
        return None
    if not all(_PLAIN_NAME.fullmatch(name) for name in names):
        return None
    if not batch.num_rows:
        return b""
    parts: list[pa.Array | pa.Scalar] = []
    for i, name in enumerate(names):
        text = column_text(batch.column(i))
        if text is None:
            return None
        parts += [pa.scalar(('{"' if i == 0 else ',"') + name + '":'), text]
    parts.append(pa.scalar("}\n"))
    try:
        lines = pc.binary_join_element_wise(*parts, pa.scalar(""))
    except (pa.ArrowInvalid, pa.ArrowCapacityError):
        return None  # more text than one Arrow string array holds
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)
    first, last = int(offsets[lines.offset]), int(offsets[lines.offset + len(lines)])
    return bytes(memoryview(lines.buffers()[2])[first:last])
