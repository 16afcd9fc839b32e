"""Data batches as bytes: Arrow IPC when Arrow holds the rows faithfully, value-coded rows if not.

A batch that already holds an Arrow ``RecordBatch`` is always sent as one
Arrow IPC stream (schema + one batch); the receiver reads it zero-copy.
A batch of Python rows goes through Arrow only if the round trip is exact:
every row a ``dict`` with the same ``str`` keys in the same order, and every
column holding one scalar Python type (``bool``, ``int``, ``float``, ``str``
or ``bytes``) or ``None``. Anything else — a key missing from some rows,
``1`` next to ``2.5`` (Arrow would widen it to ``1.0``), tuples (they come
back as lists), nested dicts, integers beyond 64 bits, dates, registered
dataclasses — travels as a tuple of rows in the data-only value codec
(:mod:`~barrier_runtime.core.values`), which round-trips every value it can
hold exactly; a record holding anything else fails with that codec's error.

>>> from barrier_runtime.api import batch as batch_mod
>>> kind, payload = encode_batch(batch_mod.Batch.from_rows([{"k": "a", "v": 1}]))
>>> kind.name, decode_batch(kind, payload).rows()
('ARROW', ({'k': 'a', 'v': 1},))
>>> kind, payload = encode_batch(batch_mod.Batch.from_rows([{"k": "a"}, {"v": (1, None)}]))
>>> kind.name, decode_batch(kind, payload).rows()
('ROWS', ({'k': 'a'}, {'v': (1, None)}))

Nothing received is unpickled: a peer (even one that passed the handshake)
can make the receiver build only plain values and registered value types.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

import pyarrow as pa

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.core import values


class DataEncoding(enum.Enum):
    ARROW = "arrow"
    ROWS = "rows"


Payload = bytes | memoryview

_SCALARS = frozenset({bool, int, float, str, bytes})
_ARROW_ERRORS = (pa.ArrowException, OverflowError, TypeError, ValueError, UnicodeError)


def encode_batch(batch: batch_mod.Batch) -> tuple[DataEncoding, Payload]:
    """The wire form of ``batch``: Arrow IPC stream bytes, or value-coded rows as a fallback."""
    arrow = _arrow_of(batch)
    if arrow is None:
        return DataEncoding.ROWS, values.encode(tuple(batch.rows()))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, arrow.schema) as writer:
        writer.write_batch(arrow)
    return DataEncoding.ARROW, memoryview(sink.getvalue())


def decode_batch(encoding: DataEncoding, payload: Payload) -> batch_mod.Batch:
    if encoding is DataEncoding.ROWS:
        rows = values.decode(payload)
        if not isinstance(rows, tuple):
            raise values.ValueDecodeError(f"rows must be a tuple, got {type(rows).__name__}")
        return batch_mod.Batch.from_rows(rows)
    reader = pa.ipc.open_stream(pa.py_buffer(payload))
    arrow = reader.read_next_batch()
    return batch_mod.Batch.from_arrow(arrow)


def _arrow_of(batch: batch_mod.Batch) -> pa.RecordBatch | None:
    # A batch built from Arrow is sent as is. Rows someone converted to Arrow (a batch
    # step on another branch, say) are checked like any rows: that conversion may have
    # changed them (1 next to 2.5 became 1.0).
    if batch.arrow_is_exact:
        return batch.to_arrow()
    rows = batch.rows()
    if not arrow_faithful(rows):
        return None
    try:
        return batch.to_arrow()
    except _ARROW_ERRORS:
        return None


def arrow_faithful(rows: Sequence[batch_mod.Record]) -> bool:
    """True when ``Batch.from_rows(rows).to_arrow().to_pylist()`` gives back ``rows`` exactly.

    Conservative: it may say False for rows Arrow could carry (nested values);
    those take the value-coded path, which is exact too.
    """
    if not rows:
        return True
    first = rows[0]
    if type(first) is not dict:
        return False
    keys = tuple(first)
    if not keys or not all(type(k) is str for k in keys):  # Arrow drops the rows of [{}, {}]
        return False
    column_types: dict[str, type] = {}
    for row in rows:
        if type(row) is not dict or tuple(row) != keys:
            return False
        for key, value in row.items():
            if value is None:
                continue
            kind = type(value)
            if kind not in _SCALARS or column_types.setdefault(key, kind) is not kind:
                return False
    return True
