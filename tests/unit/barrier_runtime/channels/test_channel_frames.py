"""Frames and the batch codec: every message survives encode → bytes → decode exactly."""

from __future__ import annotations

import datetime
import math
import pickle
import socket
import threading
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.channels import codec, errors, frames, messages, wire
from barrier_runtime.core import types
from barrier_runtime.core import values as value_codec


def same(a: Any, b: Any) -> bool:
    """Equal *and* of the same types all the way down (1 == 1.0 == True is not enough)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def roundtrip(message: Any, channel: int = 9, priority: bool = False) -> tuple[int, Any]:
    frame = b"".join(bytes(b) for b in frames.encode(channel, message, priority=priority))
    return frames.decode(*frames.split(frame))


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.binary(max_size=8)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
heterogeneous_rows = st.lists(st.dictionaries(st.text(max_size=4), values, max_size=4), max_size=8)

COLUMN_VALUES = {
    "int": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(),
    "str": st.text(max_size=8),
    "bytes": st.binary(max_size=8),
    "bool": st.booleans(),
}


@st.composite
def uniform_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Rows Arrow can carry exactly: same keys, one scalar type (or None) per column."""
    names = draw(st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=4, unique=True))
    kinds = [draw(st.sampled_from(sorted(COLUMN_VALUES))) for _ in names]
    n = draw(st.integers(1, 20))
    return [
        {
            name: draw(st.none() | COLUMN_VALUES[kind])
            for name, kind in zip(names, kinds, strict=True)
        }
        for _ in range(n)
    ]


@settings(max_examples=300, deadline=None)
@given(heterogeneous_rows)
def test_any_rows_round_trip_exactly(rows: list[dict[str, Any]]) -> None:
    _, batch = roundtrip(batch_mod.Batch.from_rows(rows))
    assert isinstance(batch, batch_mod.Batch)
    assert same(list(batch.rows()), rows)


@settings(max_examples=200, deadline=None)
@given(uniform_rows())
def test_uniform_rows_travel_as_arrow_and_round_trip_exactly(rows: list[dict[str, Any]]) -> None:
    kind, _ = codec.encode_batch(batch_mod.Batch.from_rows(rows))
    assert kind is codec.DataEncoding.ARROW
    _, batch = roundtrip(batch_mod.Batch.from_rows(rows))
    assert same(list(batch.rows()), rows)


@pytest.mark.parametrize(
    ("rows", "encoding"),
    [
        ([{"k": "a", "v": 1}, {"k": None, "v": None}], "ARROW"),
        ([{"v": 1}, {"v": 2.5}], "ROWS"),  # Arrow would widen 1 to 1.0
        ([{"v": 1}, {"v": True}], "ROWS"),  # and True to 1
        ([{"a": 1}, {"b": 2}], "ROWS"),  # Arrow keeps the first row's keys only
        ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], "ROWS"),  # key order would change
        ([{"v": (1, 2)}], "ROWS"),  # tuples come back as lists
        ([{"v": 2**64}], "ROWS"),  # beyond int64
        ([{}, {}], "ROWS"),  # Arrow would drop column-less rows
        ([{"v": "\ud800"}], "ROWS"),  # not encodable as UTF-8
        ([{"v": datetime.date(2024, 1, 2)}], "ROWS"),
        ([], "ARROW"),
    ],
)
def test_codec_falls_back_to_value_coded_rows_when_arrow_would_change_them(
    rows: list[dict[str, Any]], encoding: str
) -> None:
    kind, _ = codec.encode_batch(batch_mod.Batch.from_rows(rows))
    assert kind.name == encoding
    _, batch = roundtrip(batch_mod.Batch.from_rows(rows))
    assert same(list(batch.rows()), rows)


def test_rows_already_converted_to_arrow_are_checked_like_any_rows() -> None:
    # Another consumer of the same batch (a batch step) converted its rows to Arrow,
    # which turned the tuple into a list; the wire must still deliver the rows themselves.
    rows = [{"v": (1, 2)}]
    batch = batch_mod.Batch.from_rows(rows)
    assert batch.to_arrow().column("v").to_pylist() == [[1, 2]]
    kind, _ = codec.encode_batch(batch)
    assert kind.name == "ROWS"
    _, received = roundtrip(batch)
    assert same(list(received.rows()), rows)


def test_a_record_the_value_codec_cannot_hold_fails_to_encode_and_rows_never_unpickle() -> None:
    class Opaque:
        pass

    with pytest.raises(value_codec.UnencodableValueError, match="Opaque"):
        codec.encode_batch(batch_mod.Batch.from_rows([{"v": Opaque()}]))
    with pytest.raises(value_codec.ValueDecodeError):
        codec.decode_batch(codec.DataEncoding.ROWS, pickle.dumps(({"v": 1},)))


def test_arrow_batches_are_sent_as_arrow_whatever_their_types() -> None:
    arrow = pa.RecordBatch.from_pydict(
        {
            "ts": pa.array([datetime.datetime(2024, 1, 1, 12)], pa.timestamp("us")),
            "tags": pa.array([["a", "b"]], pa.list_(pa.string())),
            "amount": pa.array([12.5], pa.float32()),
        }
    )
    kind, _ = codec.encode_batch(batch_mod.Batch.from_arrow(arrow))
    assert kind is codec.DataEncoding.ARROW
    _, batch = roundtrip(batch_mod.Batch.from_arrow(arrow))
    assert batch.to_arrow().equals(arrow)


@settings(max_examples=200, deadline=None)
@given(
    cid=st.integers(0, 2**64 - 1),
    timestamp=st.floats(allow_nan=False),
    kind=st.sampled_from(types.CheckpointKind),
    unaligned=st.booleans(),
    priority=st.booleans(),
    channel=st.integers(0, 2**32 - 1),
)
def test_barrier_frames_round_trip(
    cid: int,
    timestamp: float,
    kind: types.CheckpointKind,
    unaligned: bool,
    priority: bool,
    channel: int,
) -> None:
    barrier = types.Barrier(types.CheckpointId(cid), timestamp, kind, unaligned=unaligned)
    got_channel, message = roundtrip(barrier, channel, priority)
    assert got_channel == channel
    assert message == frames.BarrierFrame(barrier, priority)


@pytest.mark.parametrize(
    "message",
    [
        messages.CancelMarker(types.CheckpointId(42)),
        messages.END_OF_PARTITION,
        messages.WatermarkMarker(1_700_000_000_123),
        messages.WatermarkMarker(-(1 << 63)),
        messages.WatermarkMarker((1 << 63) - 1),
        messages.IdleMarker(idle=True),
        messages.IdleMarker(idle=False),
        frames.Credit(7),
        frames.Hello("job-1/attempt-3/0f3c", sender=2, receiver=5),
        frames.Welcome(5, "job-1/attempt-3/0f3c"),
        frames.Reject("worker 2 belongs to another job attempt"),
    ],
)
def test_control_frames_round_trip(message: Any) -> None:
    assert roundtrip(message) == (9, message)


def test_corrupt_headers_and_payloads_are_frame_errors() -> None:
    with pytest.raises(errors.FrameError, match="unknown frame kind"):
        frames.parse_header(frames.HEADER.pack(0, 99, 1))
    with pytest.raises(errors.FrameError, match="exceeds"):
        frames.parse_header(frames.HEADER.pack(frames.MAX_PAYLOAD + 1, frames.FrameKind.CREDIT, 1))
    with pytest.raises(errors.FrameError, match="bad BARRIER payload"):
        frames.decode(frames.FrameKind.BARRIER, 1, b"short")
    with pytest.raises(errors.FrameError, match="not a checkpointed-jobs channel peer"):
        frames.decode(frames.FrameKind.HELLO, 0, b"HTTP" + bytes(10))
    with pytest.raises(errors.FrameError, match="bad DATA_ARROW payload"):
        frames.decode(frames.FrameKind.DATA_ARROW, 1, b"not arrow")
    with pytest.raises(errors.FrameError, match="bad WATERMARK payload"):
        frames.decode(frames.FrameKind.WATERMARK, 1, b"\x01")
    with pytest.raises(errors.FrameError, match="neither 0"):
        frames.decode(frames.FrameKind.WATERMARK_STATUS, 1, b"\x07")


def test_frame_reader_reads_many_frames_written_with_vectored_sends() -> None:
    left, right = socket.socketpair()
    rows = [{"seq": i, "pad": "x" * 100} for i in range(2000)]
    sent: list[Any] = []
    for i in range(50):
        sent.append(batch_mod.Batch.from_rows(rows[: i * 40]))
        sent.append(frames.Credit(i))
    sent.append(messages.END_OF_PARTITION)

    def write() -> None:
        buffers: frames.Buffers = []
        for i, message in enumerate(sent):
            buffers += frames.encode(i % 3, message)
        wire.send_buffers(left, buffers)
        left.shutdown(socket.SHUT_WR)

    writer = threading.Thread(target=write)
    writer.start()
    reader = wire.FrameReader(right)
    got = []
    while (frame := reader.read()) is not None:
        got.append(frames.decode(*frame))
    writer.join()
    assert [c for c, _ in got] == [i % 3 for i in range(len(sent))]
    for (_, message), expected in zip(got, sent, strict=True):
        if isinstance(expected, batch_mod.Batch):
            assert isinstance(message, batch_mod.Batch) and message.rows() == expected.rows()
        else:
            assert message == expected
    left.close()
    right.close()


def test_frame_reader_reports_a_stream_cut_inside_a_frame() -> None:
    left, right = socket.socketpair()
    frame = b"".join(bytes(b) for b in frames.encode(1, frames.Credit(3)))
    left.sendall(frame[:-2])
    left.close()
    with pytest.raises(EOFError, match="inside a CREDIT frame"):
        wire.FrameReader(right).read()
    right.close()


def test_oversized_frames_are_refused_when_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(frames, "MAX_PAYLOAD", 10)
    with pytest.raises(errors.FrameError, match="emit smaller batches"):
        frames.encode(1, batch_mod.Batch.from_rows([{"v": "x" * 100}]))
