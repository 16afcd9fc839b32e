"""The JSON-lines reader of :mod:`~barrier_runtime.connectors.arrow_formats`: Arrow when it
reads a block exactly as :mod:`~barrier_runtime.connectors.file_formats` would, else that parser.

* Without declared fields: a block falls back when Arrow fails on it, when one of its
  values is null (Arrow cannot tell ``null`` from a missing key, and a record
  must keep its own keys), when a float column holds a whole number (Arrow
  would turn ``1`` into ``1.0`` next to ``1.5``), or when a line does not hold
  exactly one record. A top-level column of strings Arrow takes for
  timestamps is read again (in this block and the next ones) as strings.
  A record read through Arrow lists its keys in the block's column order
  (the values are the same; only ``list(record)`` order may differ).
* With declared ``fields`` (name → type, like Spark's reader
  schema): each block is read with that schema and the other fields are
  skipped, not turned into columns (Arrow still checks that they are JSON);
  a null or missing field is ``None`` either way, so it needs no fallback,
  and a value of another type (Arrow refuses it) sends the block to the
  per-line parser, which names the record. A ``json`` field is read by the
  per-line parser throughout. A block that is not ASCII is checked to be
  UTF-8 first: Arrow does not look inside the fields it skips.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from barrier_runtime.connectors import arrow_blocks, file_formats

_BLANK_JSON = re.compile(rb"^[ \t\r]*$", re.MULTILINE)
_NEWLINE, _OPEN, _CLOSE, _RETURN = (ord(c) for c in "\n{}\r")


def _json_line_shape(data: bytes, begin: int, end: int) -> tuple[int, bool]:
    """The lines of ``data[begin:end]``, and whether each one starts with ``{`` and ends with
    ``}`` (before an optional ``\\r``), with nothing around them (numpy, no Python loop)."""
    if end == begin:
        return 0, True
    text = np.frombuffer(data, dtype=np.uint8, count=end - begin, offset=begin)
    newlines = np.flatnonzero(text == _NEWLINE)
    terminated = len(newlines) and newlines[-1] == len(text) - 1
    stops = newlines if terminated else np.append(newlines, len(text))
    starts = np.concatenate(([0], stops[:-1] + 1))
    if not np.all(text[np.minimum(starts, len(text) - 1)] == _OPEN) or np.any(stops == starts):
        return len(stops), False
    last = text[stops - 1]
    closed = last == _CLOSE
    if not np.all(closed):
        closed |= (
            (last == _RETURN) & (stops - starts >= 2) & (text[np.maximum(stops - 2, 0)] == _CLOSE)
        )
    return len(stops), bool(np.all(closed))


def jsonl_pieces(
    data: bytes,
    skip: int,
    batch_size: int,
    block_bytes: int,
    fields: Mapping[str, file_formats.ColumnType] | None,
) -> Iterator[arrow_blocks.Piece]:
    """The records of a JSON-lines file after the first ``skip``, block by block."""
    first_line = 1
    text_columns: set[str] = set()  # strings Arrow took for timestamps: read them as text
    schema = (
        None
        if fields is None
        else pa.schema([(n, arrow_blocks.ARROW_TYPES[t]) for n, t in fields.items()])
    )
    for begin, end in arrow_blocks.blocks(data, 0, block_bytes):
        lines, braced = _json_line_shape(data, begin, end)
        if skip and (records := arrow_blocks.records(_BLANK_JSON, data, begin, end, lines)) <= skip:
            skip -= records
        else:
            shape = _LineShape(lines, braced)
            table = (
                _read_json_exactly(data, begin, end, shape, text_columns)
                if schema is None
                else _read_json_fields(data, begin, end, shape, schema)
            )
            if table is None:
                block = data[begin:end]
                yield from file_formats.jsonl_items(
                    block, skip, first_line=first_line, fields=fields
                )
            else:
                yield from arrow_blocks.batches(table, skip, batch_size)
            skip = 0
        first_line += lines


class _LineShape(NamedTuple):
    lines: int
    braced: bool
    """Every line is one ``{…}`` with nothing around it (see :func:`_json_line_shape`)."""


def _read_json_exactly(
    data: bytes, begin: int, end: int, shape: _LineShape, text_columns: set[str]
) -> pa.Table | None:
    table = _read_json(data[begin:end], text_columns)
    if table is not None and any(pa.types.is_timestamp(f.type) for f in table.schema):
        text_columns.update(f.name for f in table.schema if pa.types.is_timestamp(f.type))
        table = _read_json(data[begin:end], text_columns)
    if table is None or not _one_record_per_line(table, data, begin, end, shape):
        return None
    if table.num_columns == 0:
        return None
    exact = all(_exact(chunk) for column in table.columns for chunk in column.chunks)
    return table if exact else None


def _read_json_fields(
    data: bytes, begin: int, end: int, shape: _LineShape, schema: pa.Schema
) -> pa.Table | None:
    block = data[begin:end]
    if not block.isascii():
        try:
            block.decode("utf-8")
        except UnicodeDecodeError:
            return None
    options = pa_json.ReadOptions(use_threads=False, block_size=max(len(block), 1 << 16))
    parse = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    try:
        table = pa_json.read_json(pa.py_buffer(block), read_options=options, parse_options=parse)
    except (pa.ArrowException, ValueError):
        return None
    if not _one_record_per_line(table, data, begin, end, shape):
        return None
    return None if any(_has_infinity(column) for column in table.columns) else table


def _has_infinity(column: pa.ChunkedArray) -> bool:
    """An infinite float: Arrow reads an integer too large for a double as infinity, where
    the per-line parser calls the record malformed (``float(10**400)`` overflows)."""
    if not pa.types.is_floating(column.type):
        return False
    return bool(pc.any(pc.is_inf(column)).as_py())


def _one_record_per_line(
    table: pa.Table, data: bytes, begin: int, end: int, shape: _LineShape
) -> bool:
    """Whether Arrow's rows are the per-line parser's records, line for line.

    Arrow reads an object that spans lines, and two objects on one line, as
    rows; the per-line parser calls each such line malformed. When every
    (non-blank) line starts with ``{`` and ends with ``}`` no object can span
    lines (the next line would have to start with ``,``, ``}`` or ``]``), so
    each line holds at least one row, and as many rows as lines means one each.
    """
    rows: int = table.num_rows
    if shape.braced:
        return rows == shape.lines
    objects = [line.strip() for line in data[begin:end].split(b"\n")]
    objects = [line for line in objects if line]
    if not all(line.startswith(b"{") and line.endswith(b"}") for line in objects):
        return False
    return rows == len(objects)


def _read_json(block: bytes, text_columns: set[str]) -> pa.Table | None:
    options = pa_json.ReadOptions(use_threads=False, block_size=max(len(block), 1 << 16))
    schema = pa.schema([(name, pa.string()) for name in sorted(text_columns)])
    parse = pa_json.ParseOptions(explicit_schema=schema if text_columns else None)
    try:
        return pa_json.read_json(pa.py_buffer(block), read_options=options, parse_options=parse)
    except (pa.ArrowException, ValueError):
        return None


def _exact(array: pa.Array) -> bool:
    """Whether ``array.to_pylist()`` gives what ``json.loads`` gave for these values."""
    if array.null_count:
        return False
    kind = array.type
    if kind in (pa.int64(), pa.string(), pa.bool_()):
        return True
    if kind == pa.float64():
        return not pc.any(pc.equal(pc.floor(array), array)).as_py()
    if pa.types.is_null(kind):
        return len(array) == 0
    if pa.types.is_list(kind):
        return _exact(array.flatten())
    if pa.types.is_struct(kind):
        return all(_exact(array.field(i)) for i in range(kind.num_fields))
    return False
