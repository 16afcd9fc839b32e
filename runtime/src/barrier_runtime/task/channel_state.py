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
==================  ========  ==============================================

The schema's metadata carries :data:`FORMAT`; anything else (the pickle of
older releases, a truncated object) is refused with
:class:`ChannelStateFormatError` rather than guessed at. Integrity is the
store's job: the checkpoint's ``_metadata`` records every channel-state
object's size and sha256, and ``CheckpointStore.read_state`` checks both
before the bytes reach :func:`decode`.

>>> blob = encode([("sum", 0, 1, "input", ({"k": "a", "v": 1},)),
...                ("sum", 1, 0, "output", ({"k": ("x", 2)},))])
>>> decode(blob)
[('sum', 0, 1, 'input', ({'k': 'a', 'v': 1},)), ('sum', 1, 0, 'output', ({'k': ('x', 2)},))]
"""

from __future__ import annotations

import io
from collections.abc import Iterable

import pyarrow as pa

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.channels import codec

Entry = tuple[str, int, int, str, tuple[batch_mod.Record, ...]]
"""``(target_task, side, target_subtask, origin, records)``."""

FORMAT_KEY = b"cjob.channel_state.format"
FORMAT = b"arrow-1"

_SCHEMA = pa.schema(
    [
        ("target_task", pa.string()),
        ("side", pa.int32()),
        ("target_subtask", pa.int32()),
        ("origin", pa.string()),
        ("encoding", pa.string()),
        ("records", pa.binary()),
    ],
    metadata={FORMAT_KEY: FORMAT},
)
_ORIGINS = frozenset({"input", "output"})


class ChannelStateFormatError(ValueError):
    """A channel-state object is not in this runtime's format (old pickle, corrupt, foreign)."""


def encode(entries: Iterable[Entry]) -> bytes:
    """The stored bytes of ``entries``; the value codec's error for a record it cannot hold.

    One record batch per entry, written as it is made, so that besides the output only
    one entry's Arrow copy is alive at a time (channel state can be as large as every
    channel's buffers together).
    """
    out = io.BytesIO()  # grows by an eighth, and getvalue() hands its buffer over uncopied
    with pa.ipc.new_stream(pa.PythonFile(out, mode="w"), _SCHEMA) as writer:
        for target_task, side, target_subtask, origin, rows in entries:
            encoding, payload = codec.encode_batch(batch_mod.Batch.from_rows(rows))
            # bytes, not the memoryview: pa.array() of a memoryview of an Arrow buffer
            # keeps that buffer alive for good (measured: ~7 MiB per checkpoint here).
            row = (target_task, side, target_subtask, origin, encoding.value, bytes(payload))
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
    if found != FORMAT or not table.schema.equals(_SCHEMA):
        raise ChannelStateFormatError(
            f"channel state has format {found!r} and schema {table.schema.names}, "
            f"this runtime reads {FORMAT!r}"
        )
    out: list[Entry] = []
    for task, side, subtask, origin, encoding, records in zip(
        *(table.column(name).to_pylist() for name in _SCHEMA.names), strict=True
    ):
        if origin not in _ORIGINS:
            raise ChannelStateFormatError(f"channel state has an entry of origin {origin!r}")
        try:
            batch = codec.decode_batch(codec.DataEncoding(encoding), records)
        except (ValueError, pa.ArrowException) as exc:
            raise ChannelStateFormatError(f"channel state records unreadable: {exc}") from exc
        out.append((task, side, subtask, origin, batch.rows()))
    return out
