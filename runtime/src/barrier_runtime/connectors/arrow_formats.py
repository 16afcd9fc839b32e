"""Arrow readers for :class:`~barrier_runtime.connectors.file_source.FileSource`: no Python rows.

Pure functions over a file's (decompressed) bytes. :func:`text_pieces` cuts a
JSON-lines or CSV file into blocks of whole lines (about ``block_bytes``
each, the same cut whatever the resume position), reads each block with
pyarrow's reader and yields it as ``RecordBatch``\\ es of at most
``batch_size`` rows. A block Arrow cannot read *exactly as the per-line
parser of* :mod:`~barrier_runtime.connectors.file_formats` *would* is read by
that parser instead and yields its :class:`~file_formats.Item`\\ s, so a
malformed record is still reported with its line, the good records around it
are kept, and every record has the same Python value either way:

* JSON lines: a block falls back when Arrow fails on it, when one of its
  values is null (Arrow cannot tell ``null`` from a missing key, and a record
  must keep its own keys), when a float column holds a whole number (Arrow
  would turn ``1`` into ``1.0`` next to ``1.5``), or when a line does not hold
  exactly one record. A top-level column of strings Arrow takes for
  timestamps is read again (in this block and the next ones) as strings.
  A record read through Arrow lists its keys in the block's column order
  (the values are the same; only ``list(record)`` order may differ).
* JSON lines with declared ``fields`` (name → type, like Spark's reader
  schema): each block is read with that schema and the other fields are
  skipped, not turned into columns (Arrow still checks that they are JSON);
  a null or missing field is ``None`` either way, so it needs no fallback,
  and a value of another type (Arrow refuses it) sends the block to the
  per-line parser, which names the record. A ``json`` field is read by the
  per-line parser throughout. A block that is not ASCII is checked to be
  UTF-8 first: Arrow does not look inside the fields it skips.
* CSV: every column gets its explicit type (``str`` unless ``column_types``
  says otherwise; empty text is ``""`` for ``str`` and ``None`` otherwise).
  Files with ``json`` columns, a single column with quotes, bare ``\\r`` line
  ends or an unusual header are read by the per-line parser throughout.
  Quoted files are read as one block, since a quoted field may hold a newline,
  and by the per-line parser if a quote has field text on both sides (Arrow
  reads ``"b"c`` as ``bc``, the per-line parser reports it).

Record counts match the per-line parser's (blank lines and the header do not
count, a malformed record does), so positions are the same; a block that lies
wholly before the resume position is counted from its lines, not parsed.

Parquet (:func:`parquet_batches`) is read batch by batch, row group by row group.
A partition holds its file's bytes and one block (or batch) read from them.

>>> pieces = list(text_pieces(b'{"a": 1}\\n{"a": 2}\\n[3]\\n{"a": 4}\\n', "jsonl", skip=1))
>>> [p.line if isinstance(p, file_formats.Item) else p.to_pylist() for p in pieces]
[2, 3, 4]
>>> [p.to_pylist() for p in text_pieces(b'{"a": 1}\\n{"a": 2}\\n', "jsonl", skip=1)]
[[{'a': 2}]]
"""

from __future__ import annotations

import csv
import re
from collections.abc import Generator, Iterator, Mapping
from typing import Literal, NamedTuple, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json

from barrier_runtime.connectors import file_formats

Piece: TypeAlias = pa.RecordBatch | file_formats.Item
"""What a text file yields: an exactly-read Arrow batch, or one record of the per-line parser."""

BLOCK_BYTES = 1 << 20
"""The smallest block a file is cut into (see :func:`block_bytes_for`)."""
MAX_BLOCK_BYTES = 16 << 20
_SAMPLE_BYTES = 1 << 16
_FILL = 0.98
_BLANK_JSON = re.compile(rb"^[ \t\r]*$", re.MULTILINE)
_NEWLINE, _OPEN, _CLOSE, _RETURN = (ord(c) for c in "\n{}\r")
_EMPTY_CSV = re.compile(rb"^\r?$", re.MULTILINE)
_ARROW_TYPES: dict[file_formats.ColumnType, pa.DataType] = {
    "str": pa.string(),
    "int": pa.int64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
}
_TRUE = [v for t in ("true", "t", "yes", "y", "1") for v in (t, t.upper(), t.title())]
_FALSE = [v for t in ("false", "f", "no", "n", "0") for v in (t, t.upper(), t.title())]


def text_pieces(
    data: bytes,
    fmt: Literal["jsonl", "csv"],
    *,
    skip: int = 0,
    csv_options: file_formats.CsvOptions | None = None,
    json_fields: Mapping[str, file_formats.ColumnType] | None = None,
    batch_size: int = 65_536,
    block_bytes: int = BLOCK_BYTES,
) -> Iterator[Piece]:
    """Every data record of a text file after the first ``skip`` ones, as batches or items."""
    if fmt == "jsonl" and json_fields is not None:
        if "json" in json_fields.values() or not json_fields:
            yield from file_formats.jsonl_items(data, skip, fields=json_fields)
        else:
            yield from _jsonl_pieces(data, skip, batch_size, block_bytes, json_fields)
        return
    if fmt == "jsonl":
        yield from _jsonl_pieces(data, skip, batch_size, block_bytes, None)
        return
    options = csv_options or file_formats.CsvOptions()
    layout = _csv_layout(data, options)
    if layout is None:
        yield from file_formats.iter_items(data, "csv", skip=skip, csv_options=options)
        return
    yield from _csv_pieces(data, layout, skip, batch_size, block_bytes)


def block_bytes_for(data: bytes, batch_size: int) -> int:
    """Bytes per block for ``data``: a little under ``batch_size`` lines, so that a block
    fills one batch (aiming at exactly ``batch_size`` would leave a batch of the few lines
    past the estimate in every block).

    Lines are measured in the file's first 64 KiB, so the cut is the same at
    every resume position; the result stays between :data:`BLOCK_BYTES` and
    :data:`MAX_BLOCK_BYTES` (a block is parsed in one go and held while its
    batches go out).

    >>> block_bytes_for(b"x" * 99 + b"\\n", 1000) == BLOCK_BYTES
    True
    >>> block_bytes_for(b"x" * 99 + b"\\n", 65_536)
    6422528
    """
    sample = data[:_SAMPLE_BYTES]
    per_line = len(sample) / max(1, sample.count(b"\n"))
    wanted = _FILL * per_line * batch_size
    return int(min(max(BLOCK_BYTES, wanted), max(BLOCK_BYTES, MAX_BLOCK_BYTES)))


def _blocks(data: bytes, start: int, block_bytes: int) -> Iterator[tuple[int, int]]:
    """``(begin, end)`` spans of whole lines, about ``block_bytes`` each, from ``start`` on."""
    begin = start
    while begin < len(data):
        cut = data.find(b"\n", min(begin + block_bytes, len(data)) - 1)
        end = len(data) if cut < 0 else cut + 1
        yield begin, end
        begin = end


def _line_count(data: bytes, begin: int, end: int) -> int:
    newlines = data.count(b"\n", begin, end)
    return newlines + (0 if end == begin or data[end - 1 : end] == b"\n" else 1)


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


def _records(pattern: re.Pattern[bytes], data: bytes, begin: int, end: int, lines: int) -> int:
    """The data records among ``lines`` lines: those not matching ``pattern`` (blank lines)."""
    stop = end - 1 if data[end - 1 : end] == b"\n" else end  # no line after the last newline
    return lines - len(pattern.findall(data, begin, stop))


def _batches(table: pa.Table, skip: int, batch_size: int) -> Iterator[pa.RecordBatch]:
    for batch in table.slice(skip).combine_chunks().to_batches(max_chunksize=batch_size):
        if batch.num_rows:
            yield batch


def _jsonl_pieces(
    data: bytes,
    skip: int,
    batch_size: int,
    block_bytes: int,
    fields: Mapping[str, file_formats.ColumnType] | None,
) -> Iterator[Piece]:
    first_line = 1
    text_columns: set[str] = set()  # strings Arrow took for timestamps: read them as text
    schema = (
        None if fields is None else pa.schema([(n, _ARROW_TYPES[t]) for n, t in fields.items()])
    )
    for begin, end in _blocks(data, 0, block_bytes):
        lines, braced = _json_line_shape(data, begin, end)
        if skip and (records := _records(_BLANK_JSON, data, begin, end, lines)) <= skip:
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
                yield from _batches(table, skip, batch_size)
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


class _CsvLayout:
    """Where a CSV file's body starts and how Arrow must read it (see :func:`_csv_layout`)."""

    __slots__ = (
        "body",
        "columns",
        "convert",
        "header_lines",
        "numeric",
        "options",
        "parse",
        "quoted",
    )

    def __init__(
        self, data: bytes, body: int, columns: tuple[str, ...], options: file_formats.CsvOptions
    ) -> None:
        self.body = body
        self.columns = columns
        self.options = file_formats.CsvOptions(
            options.delimiter, options.quotechar, columns, options.column_types
        )
        self.numeric = any(options.column_types.get(name, "str") != "str" for name in columns)
        self.header_lines = data.count(b"\n", 0, body)
        self.quoted = data.find(options.quotechar.encode(), body) >= 0
        self.parse = pa_csv.ParseOptions(
            delimiter=options.delimiter,
            quote_char=options.quotechar,
            newlines_in_values=self.quoted,
        )
        self.convert = pa_csv.ConvertOptions(
            column_types={
                name: _ARROW_TYPES[options.column_types.get(name, "str")] for name in columns
            },
            null_values=[""],
            true_values=_TRUE,
            false_values=_FALSE,
            strings_can_be_null=False,
            quoted_strings_can_be_null=True,
        )


def _csv_layout(data: bytes, options: file_formats.CsvOptions) -> _CsvLayout | None:
    """How to read ``data`` with Arrow, or ``None`` for the per-line parser throughout."""
    if "json" in options.column_types.values():
        return None
    if data.find(b"\r") >= 0 and data.count(b"\r") != data.count(b"\r\n"):
        return None  # lines ended by a bare carriage return
    body = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    columns = options.columns
    if columns is None:
        cut = data.find(b"\n", body)
        end = len(data) if cut < 0 else cut + 1
        try:
            header = data[body:end].decode("utf-8")
            rows = list(csv.reader([header], delimiter=options.delimiter, strict=True))
        except (UnicodeDecodeError, csv.Error):
            return None
        columns = tuple(rows[0]) if len(rows) == 1 else ()
        body = end
    if not columns or len(set(columns)) != len(columns) or "" in columns:
        return None
    layout = _CsvLayout(data, body, columns, options)
    return None if layout.quoted and len(columns) == 1 else layout


def _csv_pieces(
    data: bytes, layout: _CsvLayout, skip: int, batch_size: int, block_bytes: int
) -> Iterator[Piece]:
    spans = (
        iter([(layout.body, len(data))])
        if layout.quoted
        else _blocks(data, layout.body, block_bytes)
    )
    lines_before = layout.header_lines
    for begin, end in spans:
        lines = _line_count(data, begin, end)
        if (
            skip
            and not layout.quoted
            and (records := _records(_EMPTY_CSV, data, begin, end, lines)) <= skip
        ):
            skip -= records
            lines_before += lines
            continue
        table = _read_csv_exactly(data, begin, end, layout, None if layout.quoted else lines)
        if table is None:
            if not (yield from _csv_fallback(data[begin:end], layout, skip, lines_before)):
                return
            skip = 0
        else:
            yield from _batches(table, skip, batch_size)
            skip = max(0, skip - table.num_rows)
        lines_before += lines


def _read_csv_exactly(
    data: bytes, begin: int, end: int, layout: _CsvLayout, lines: int | None
) -> pa.Table | None:
    if layout.numeric and _hex_prefix(data, begin, end):
        return None  # Arrow reads hexadecimal numbers; Python's int() and float() do not
    if layout.quoted and _stray_quote(data, begin, end, layout.options):
        return None  # Arrow reads '"b"c' as 'bc'; the per-line parser calls it malformed
    read = pa_csv.ReadOptions(
        use_threads=False,
        column_names=list(layout.columns),
        block_size=max(end - begin, 1 << 16),
    )
    try:
        table = pa_csv.read_csv(
            pa.py_buffer(data[begin:end]),
            read_options=read,
            parse_options=layout.parse,
            convert_options=layout.convert,
        )
    except (pa.ArrowException, ValueError):
        return None
    rows = table.num_rows
    if (
        lines is not None
        and rows != lines
        and rows != _records(_EMPTY_CSV, data, begin, end, lines)
    ):
        return None  # Arrow and the per-line parser do not agree on which lines are records
    return table


def _hex_prefix(data: bytes, begin: int, end: int) -> bool:
    for x in (b"x", b"X"):
        if data.find(x, begin, end) >= 0 and data.find(b"0" + x, begin, end) >= 0:
            return True
    return False


def _stray_quote(data: bytes, begin: int, end: int, options: file_formats.CsvOptions) -> bool:
    """Whether a quote has field text on both sides (``"b"c``, or ``a"b`` which is harmless)."""
    text = np.frombuffer(data, dtype=np.uint8, count=end - begin, offset=begin)
    at = np.flatnonzero(text == ord(options.quotechar))
    if not len(at):
        return False
    bounds = np.array([ord(options.delimiter), ord("\n"), ord("\r"), ord(options.quotechar)])
    before = np.isin(text[np.maximum(at - 1, 0)], bounds) | (at == 0)
    after = np.isin(text[np.minimum(at + 1, len(text) - 1)], bounds) | (at == len(text) - 1)
    return bool(np.any(~before & ~after))


def _csv_fallback(
    block: bytes, layout: _CsvLayout, skip: int, lines_before: int
) -> Generator[Piece, None, bool]:
    """The per-line parser over one block; ``False`` after a broken quote (reading stops)."""
    for item in file_formats.iter_items(block, "csv", skip=skip, csv_options=layout.options):
        yield file_formats.Item(item.line + lines_before, item.record, item.problem, item.raw)
        if item.problem is not None and item.problem.startswith("not valid CSV"):
            return False
    return True


def parquet_batches(
    data: bytes, start: file_formats.ParquetPosition, batch_size: int
) -> Iterator[tuple[file_formats.ParquetPosition, pa.RecordBatch | None]]:
    """Arrow batches from ``start`` on, each with the position just after it.

    After a row group's last batch comes ``(next group, 0), None``. Raises
    ``pyarrow.ArrowException`` (or ``OSError``) for a file that is not Parquet.
    """
    import pyarrow.parquet as pq  # noqa: PLC0415 - pyarrow.parquet is slow to import

    parquet = pq.ParquetFile(pa.BufferReader(data))
    for group in range(start.row_group, parquet.num_row_groups):
        skip = start.offset if group == start.row_group else 0
        offset = 0  # rows of the group read so far (batches wholly before ``skip`` included)
        for read in parquet.iter_batches(batch_size=batch_size, row_groups=[group]):
            wanted = read.slice(max(0, skip - offset))
            offset += read.num_rows
            if wanted.num_rows:
                yield file_formats.ParquetPosition(group, offset), wanted
        yield file_formats.ParquetPosition(group + 1, 0), None
