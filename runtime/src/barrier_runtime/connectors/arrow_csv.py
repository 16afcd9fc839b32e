"""The CSV reader of :mod:`~barrier_runtime.connectors.arrow_formats`: Arrow when it reads a
block exactly as :mod:`~barrier_runtime.connectors.file_formats` would, else that parser.

Every column gets its explicit type (``str`` unless ``column_types``
says otherwise; empty text is ``""`` for ``str`` and ``None`` otherwise).
Files with ``json`` columns, a single column with quotes, bare ``\\r`` line
ends or an unusual header are read by the per-line parser throughout.
Quoted files are read as one block, since a quoted field may hold a newline,
and by the per-line parser if a quote has field text on both sides (Arrow
reads ``"b"c`` as ``bc``, the per-line parser reports it).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Generator, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

from barrier_runtime.connectors import arrow_blocks, file_formats

_EMPTY_CSV = re.compile(rb"^\r?$", re.MULTILINE)
_TRUE = [v for t in ("true", "t", "yes", "y", "1") for v in (t, t.upper(), t.title())]
_FALSE = [v for t in ("false", "f", "no", "n", "0") for v in (t, t.upper(), t.title())]


class CsvLayout:
    """Where a CSV file's body starts and how Arrow must read it (see :func:`csv_layout`)."""

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
                name: arrow_blocks.ARROW_TYPES[options.column_types.get(name, "str")]
                for name in columns
            },
            null_values=[""],
            true_values=_TRUE,
            false_values=_FALSE,
            strings_can_be_null=False,
            quoted_strings_can_be_null=True,
        )


def csv_layout(data: bytes, options: file_formats.CsvOptions) -> CsvLayout | None:
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
    layout = CsvLayout(data, body, columns, options)
    return None if layout.quoted and len(columns) == 1 else layout


def csv_pieces(
    data: bytes, layout: CsvLayout, skip: int, batch_size: int, block_bytes: int
) -> Iterator[arrow_blocks.Piece]:
    """The records of a CSV file read as ``layout`` says, after the first ``skip``."""
    spans = (
        iter([(layout.body, len(data))])
        if layout.quoted
        else arrow_blocks.blocks(data, layout.body, block_bytes)
    )
    lines_before = layout.header_lines
    for begin, end in spans:
        lines = arrow_blocks.line_count(data, begin, end)
        if (
            skip
            and not layout.quoted
            and (records := arrow_blocks.records(_EMPTY_CSV, data, begin, end, lines)) <= skip
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
            yield from arrow_blocks.batches(table, skip, batch_size)
            skip = max(0, skip - table.num_rows)
        lines_before += lines


def _read_csv_exactly(
    data: bytes, begin: int, end: int, layout: CsvLayout, lines: int | None
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
        and rows != arrow_blocks.records(_EMPTY_CSV, data, begin, end, lines)
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
    block: bytes, layout: CsvLayout, skip: int, lines_before: int
) -> Generator[arrow_blocks.Piece, None, bool]:
    """The per-line parser over one block; ``False`` after a broken quote (reading stops)."""
    for item in file_formats.iter_items(block, "csv", skip=skip, csv_options=layout.options):
        yield file_formats.Item(item.line + lines_before, item.record, item.problem, item.raw)
        if item.problem is not None and item.problem.startswith("not valid CSV"):
            return False
    return True
