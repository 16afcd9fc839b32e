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

* JSON lines, with or without declared ``fields`` (name → type, like Spark's
  reader schema): :mod:`~barrier_runtime.connectors.arrow_jsonl` says when a block
  falls back, and why.
* CSV: :mod:`~barrier_runtime.connectors.arrow_csv` says how columns are typed and
  which files the per-line parser reads throughout.

Record counts match the per-line parser's (blank lines and the header do not
count, a malformed record does), so positions are the same; a block that lies
wholly before the resume position is counted from its lines, not parsed.

How a file is cut into blocks is :mod:`~barrier_runtime.connectors.arrow_blocks`'s.
Parquet (:func:`parquet_batches`) is read batch by batch, row group by row group.
A partition holds its file's bytes and one block (or batch) read from them.

>>> pieces = list(text_pieces(b'{"a": 1}\\n{"a": 2}\\n[3]\\n{"a": 4}\\n', "jsonl", skip=1))
>>> [p.line if isinstance(p, file_formats.Item) else p.to_pylist() for p in pieces]
[2, 3, 4]
>>> [p.to_pylist() for p in text_pieces(b'{"a": 1}\\n{"a": 2}\\n', "jsonl", skip=1)]
[[{'a': 2}]]
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Literal

import pyarrow as pa

from barrier_runtime.connectors import arrow_blocks, arrow_csv, arrow_jsonl, file_formats

Piece = arrow_blocks.Piece
BLOCK_BYTES = arrow_blocks.BLOCK_BYTES
MAX_BLOCK_BYTES = arrow_blocks.MAX_BLOCK_BYTES
block_bytes_for = arrow_blocks.block_bytes_for


def text_pieces(
    data: bytes,
    fmt: Literal["jsonl", "csv"],
    *,
    skip: int = 0,
    csv_options: file_formats.CsvOptions | None = None,
    json_fields: Mapping[str, file_formats.ColumnType] | None = None,
    batch_size: int = 65_536,
    block_bytes: int = BLOCK_BYTES,
) -> Iterator[arrow_blocks.Piece]:
    """Every data record of a text file after the first ``skip`` ones, as batches or items."""
    if fmt == "jsonl" and json_fields is not None:
        if "json" in json_fields.values() or not json_fields:
            yield from file_formats.jsonl_items(data, skip, fields=json_fields)
        else:
            yield from arrow_jsonl.jsonl_pieces(data, skip, batch_size, block_bytes, json_fields)
        return
    if fmt == "jsonl":
        yield from arrow_jsonl.jsonl_pieces(data, skip, batch_size, block_bytes, None)
        return
    options = csv_options or file_formats.CsvOptions()
    layout = arrow_csv.csv_layout(data, options)
    if layout is None:
        yield from file_formats.iter_items(data, "csv", skip=skip, csv_options=options)
        return
    yield from arrow_csv.csv_pieces(data, layout, skip, batch_size, block_bytes)


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
