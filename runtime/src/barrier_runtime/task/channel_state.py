"""The stored form of an unaligned checkpoint's channel state: one Arrow IPC stream, no pickle.

Channel state is the in-flight records a subtask owes its inputs when it
takes an unaligned snapshot (see :mod:`~barrier_runtime.task.snapshots`).
A subtask stores all its entries as one object, an Arrow IPC stream with a
row per entry (one record batch each):

==================  ========  ==============================================
column              type      meaning
==================  ========  ==============================================
``target_task``     string    the task whose input the records are owed to
``side``            int32     which input of that task
``target_subtask``  int32     its subtask when the snapshot was taken
``origin``          string    ``input`` (received before the barrier) or
                              ``output`` (overtaken by it)
``encoding``        string    ``arrow`` or ``rows`` (of ``channels.codec``)
``records``         binary    the records: an Arrow IPC stream when Arrow
                              holds them faithfully, else a tuple in the
                              data-only value codec (:mod:`~barrier_runtime.core.values`)
``source_subtask``  int32     the sending subtask (``-1``: not recorded)
``kind``            string    ``rows``, or an event-time marker that travelled
                              between them: ``watermark`` / ``idle``
``value``           int64     the marker's watermark, or 1/0 for idle/active
==================  ========  ==============================================

Format ``arrow-2`` added the last three columns; objects of ``arrow-1`` (records
only) are still read.

The schema's metadata carries :data:`FORMAT`; anything else (the pickle of
older releases, a truncated object) is refused with
:class:`ChannelStateFormatError` rather than guessed at. Integrity is the
store's job: the checkpoint's ``_metadata`` records every channel-state
object's size and sha256, and ``CheckpointStore.read_state`` checks both
before the bytes reach :func:`decode`.

>>> from barrier_runtime.channels import messages
>>> blob = encode([("sum", 0, 1, "input", ({"k": "a", "v": 1},), 0),
...                ("sum", 0, 1, "input", messages.WatermarkMarker(42), 0),
...                ("sum", 1, 0, "output", ({"k": ("x", 2)},), 1)])
>>> for entry in decode(blob)[1:]:
...     print(entry)
('sum', 0, 1, 'input', WatermarkMarker(value=42), 0)
('sum', 1, 0, 'output', ({'k': ('x', 2)},), 1)
"""

from __future__ import annotations

import io
from collections.abc import Iterable

import pyarrow as pa

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.channels import codec, messages

Payload = tuple[batch_mod.Record, ...] | messages.WatermarkMarker | messages.IdleMarker
Entry = tuple[str, int, int, str, Payload, int]
"""``(target_task, side, target_subtask, origin, records or marker, source_subtask)``."""
Stored = tuple[str, int, int, str, Payload | batch_mod.Batch, int]
"""An entry to store; its records may still be the batch that carried them."""

FORMAT_KEY = b"cjob.channel_state.format"
FORMAT = b"arrow-2"
_FORMAT_1 = b"arrow-1"

_FIELDS_1 = [
    ("target_task", pa.string()),
    ("side", pa.int32()),
    ("target_subtask", pa.int32()),
    ("origin", pa.string()),
    ("encoding", pa.string()),
    ("records", pa.binary()),
]
_SCHEMA = pa.schema(
    [*_FIELDS_1, ("source_subtask", pa.int32()), ("kind", pa.string()), ("value", pa.int64())],
    metadata={FORMAT_KEY: FORMAT},
)
_SCHEMA_1 = pa.schema(_FIELDS_1, metadata={FORMAT_KEY: _FORMAT_1})
_ORIGINS = frozenset({"input", "output"})


class ChannelStateFormatError(ValueError):
    """A channel-state object is not in this runtime's format (old pickle, corrupt, foreign)."""


def encode(entries: Iterable[Stored]) -> bytes:
    """The stored bytes of ``entries``; the value codec's error for a record it cannot hold.

    One record batch per entry, written as it is made, so that besides the output only
    one entry's Arrow copy is alive at a time (channel state can be as large as every
    channel's buffers together).
    """
    out = io.BytesIO()  # grows by an eighth, and getvalue() hands its buffer over uncopied
    with pa.ipc.new_stream(pa.PythonFile(out, mode="w"), _SCHEMA) as writer:
        for target_task, side, target_subtask, origin, item, source in entries:
            if isinstance(item, messages.WatermarkMarker):
                tail: tuple[str, bytes, str, int] = ("", b"", "watermark", item.value)
            elif isinstance(item, messages.IdleMarker):
                tail = ("", b"", "idle", int(item.idle))
            else:
                batch = (
                    item if isinstance(item, batch_mod.Batch) else batch_mod.Batch.from_rows(item)
                )
                encoding, payload = codec.encode_batch(batch)  # an Arrow batch as it is
                # bytes, not the memoryview: pa.array() of a memoryview of an Arrow buffer
                # keeps that buffer alive for good (measured: ~7 MiB per checkpoint here).
                tail = (encoding.value, bytes(payload), "rows", 0)
            encoded, records, kind, value = tail
            row = (target_task, side, target_subtask, origin, encoded, records, source, kind, value)
            writer.write_batch(
                pa.record_batch(
                    [pa.array([v], type=f.type) for v, f in zip(row, _SCHEMA, strict=True)],
                    schema=_SCHEMA,
                )
            )
    # The Arrow copies are gone; hand their pages back now rather than when the
    # allocator decays them, so that a worker's memory stays flat checkpoint after
    # checkpoint (channel state can be as large as every channel's buffers together).
    pa.default_memory_pool().release_unused()
    return out.getvalue()


def decode(blob: bytes) -> list[Entry]:
    """The entries stored in ``blob`` (:class:`ChannelStateFormatError` if not channel state)."""
    try:
        table = pa.ipc.open_stream(pa.py_buffer(blob)).read_all()
    except (pa.ArrowException, ValueError) as exc:
        raise ChannelStateFormatError(
            "channel state is not an Arrow IPC stream (written by an older release, which "
            f"pickled it, or corrupt): {exc}"
        ) from exc
    found = (table.schema.metadata or {}).get(FORMAT_KEY)
    if found == _FORMAT_1 and table.schema.equals(_SCHEMA_1):
        n = table.num_rows
        table = table.append_column("source_subtask", pa.array([-1] * n, pa.int32()))
        table = table.append_column("kind", pa.array(["rows"] * n, pa.string()))
        table = table.append_column("value", pa.array([0] * n, pa.int64()))
    elif found != FORMAT or not table.schema.equals(_SCHEMA):
        raise ChannelStateFormatError(
            f"channel state has format {found!r} and schema {table.schema.names}, "
            f"this runtime reads {FORMAT!r} and {_FORMAT_1!r}"
        )
    out: list[Entry] = []
    for task, side, subtask, origin, encoding, records, source, kind, value in zip(
        *(table.column(name).to_pylist() for name in _SCHEMA.names), strict=True
    ):
        if origin not in _ORIGINS:
            raise ChannelStateFormatError(f"channel state has an entry of origin {origin!r}")
        out.append((task, side, subtask, origin, _payload(kind, encoding, records, value), source))
    return out


def _payload(kind: str, encoding: str, records: bytes, value: int) -> Payload:
    if kind == "watermark":
        return messages.WatermarkMarker(value)
    if kind == "idle":
        return messages.IdleMarker(bool(value))
    if kind != "rows":
        raise ChannelStateFormatError(f"channel state has an entry of kind {kind!r}")
    try:
        return codec.decode_batch(codec.DataEncoding(encoding), records).rows()
    except (ValueError, pa.ArrowException) as exc:
        raise ChannelStateFormatError(f"channel state records unreadable: {exc}") from exc
