"""Cutting a text file into blocks of whole lines, and counting the records in them.

What the Arrow readers of :mod:`~barrier_runtime.connectors.arrow_formats` share,
whatever the format: the block size (:func:`block_bytes_for`, the same cut whatever
the resume position), the spans of whole lines (:func:`blocks`), how many lines and
how many data records a span holds (blank lines do not count), and a table sliced
into non-empty batches.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TypeAlias

import pyarrow as pa

from barrier_runtime.connectors import file_formats

Piece: TypeAlias = pa.RecordBatch | file_formats.Item
"""What a text file yields: an exactly-read Arrow batch, or one record of the per-line parser."""

BLOCK_BYTES = 1 << 20
"""The smallest block a file is cut into (see :func:`block_bytes_for`)."""
MAX_BLOCK_BYTES = 16 << 20
_SAMPLE_BYTES = 1 << 16
_FILL = 0.98
ARROW_TYPES: dict[file_formats.ColumnType, pa.DataType] = {
    "str": pa.string(),
    "int": pa.int64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
}
"""The Arrow type each declared column type is read as."""


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


def blocks(data: bytes, start: int, block_bytes: int) -> Iterator[tuple[int, int]]:
    """``(begin, end)`` spans of whole lines, about ``block_bytes`` each, from ``start`` on."""
    begin = start
    while begin < len(data):
        cut = data.find(b"\n", min(begin + block_bytes, len(data)) - 1)
        end = len(data) if cut < 0 else cut + 1
        yield begin, end
        begin = end


def line_count(data: bytes, begin: int, end: int) -> int:
    """The lines of ``data[begin:end]`` (a last line without a newline counts)."""
    newlines = data.count(b"\n", begin, end)
    return newlines + (0 if end == begin or data[end - 1 : end] == b"\n" else 1)


def records(pattern: re.Pattern[bytes], data: bytes, begin: int, end: int, lines: int) -> int:
    """The data records among ``lines`` lines: those not matching ``pattern`` (blank lines)."""
    stop = end - 1 if data[end - 1 : end] == b"\n" else end  # no line after the last newline
    return lines - len(pattern.findall(data, begin, stop))


def batches(table: pa.Table, skip: int, batch_size: int) -> Iterator[pa.RecordBatch]:
    """The rows of ``table`` after the first ``skip``, in non-empty batches of ``batch_size``."""
    for batch in table.slice(skip).combine_chunks().to_batches(max_chunksize=batch_size):
        if batch.num_rows:
            yield batch
