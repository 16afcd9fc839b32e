"""The wire format: length-prefixed binary frames, each tagged with a logical channel id.

Layout (network byte order)::

    u32 payload length | u8 kind | u32 logical channel id | payload

==================  ===============  =============================================
kind                direction        payload
==================  ===============  =============================================
HELLO               opener → accep.  magic ``CJCH``, u16 version, u32 sender worker,
                                     u32 receiver worker, UTF-8 attempt token
WELCOME             acceptor → op.   magic, u16 version, u32 worker, UTF-8 token
REJECT              acceptor → op.   UTF-8 reason (then the acceptor closes)
DATA_ARROW          sender → recv.   Arrow IPC stream of one record batch
DATA_ROWS           sender → recv.   value-coded tuple of rows (see ``codec``)
BARRIER             sender → recv.   u64 id, f64 timestamp, u8 kind, u8 flags
                                     (bit 0 unaligned, bit 1 sent with priority)
CANCEL              sender → recv.   u64 checkpoint id
END_OF_PARTITION    sender → recv.   empty
WATERMARK           sender → recv.   i64 watermark (ms of event time)
WATERMARK_STATUS    sender → recv.   u8: 1 idle, 0 active
CREDIT              recv. → sender   u32 number of data batches granted
==================  ===============  =============================================

Handshake frames use channel id 0. Every other frame names its logical
channel; one connection carries many.

>>> from barrier_runtime.core import types
>>> barrier = types.Barrier(types.CheckpointId(7), 1.5, unaligned=True)
>>> frame = b"".join(encode(3, barrier, priority=True))
>>> channel, message = decode(*split(frame))
>>> channel, message.barrier == barrier, message.priority
(3, True, True)
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.channels import codec, errors, messages
from barrier_runtime.core import types

MAGIC = b"CJCH"
VERSION = 3
"""2: DATA_ROWS carries the data-only value codec instead of pickle; 3: watermark frames."""
MAX_PAYLOAD = 1 << 30
"""Frames above 1 GiB are refused: split such batches (and garbage never allocates more)."""

HEADER = struct.Struct("!IBI")
_HELLO = struct.Struct("!4sHII")
_WELCOME = struct.Struct("!4sHI")
_BARRIER = struct.Struct("!QdBB")
_U64 = struct.Struct("!Q")
_I64 = struct.Struct("!q")
_U8 = struct.Struct("!B")
_U32 = struct.Struct("!I")
_UNALIGNED = 1
_PRIORITY = 2
_KINDS = (types.CheckpointKind.CHECKPOINT, types.CheckpointKind.SAVEPOINT)


class FrameKind(enum.IntEnum):
    HELLO = 1
    WELCOME = 2
    REJECT = 3
    DATA_ARROW = 10
    DATA_ROWS = 11
    BARRIER = 20
    CANCEL = 21
    END_OF_PARTITION = 22
    WATERMARK = 23
    WATERMARK_STATUS = 24
    CREDIT = 30


@dataclass(frozen=True, slots=True)
class Hello:
    """The opener's introduction: which attempt it belongs to, who it is, whom it wants."""

    token: str
    sender: int
    receiver: int


@dataclass(frozen=True, slots=True)
class Welcome:
    """The acceptor's answer: it is ``worker`` of the same attempt."""

    worker: int
    token: str


@dataclass(frozen=True, slots=True)
class Reject:
    reason: str


@dataclass(frozen=True, slots=True)
class Credit:
    """The receiver has room for ``batches`` more data batches on this channel."""

    batches: int


@dataclass(frozen=True, slots=True)
class BarrierFrame:
    barrier: types.Barrier
    priority: bool
    """Sent with ``put_priority``: the receiver inserts it ahead of its queued data too."""


Message = (
    Hello
    | Welcome
    | Reject
    | Credit
    | BarrierFrame
    | batch_mod.Batch
    | messages.CancelMarker
    | messages.EndOfPartition
    | messages.WatermarkMarker
    | messages.IdleMarker
)
Buffers = list[codec.Payload]
"""One encoded frame: the header, then the payload (kept apart to avoid copying big batches)."""


def encode(channel: int, message: Message | types.Barrier, *, priority: bool = False) -> Buffers:
    """The frame for ``message`` on logical channel ``channel``."""
    kind, payload = _payload(message, priority)
    if len(payload) > MAX_PAYLOAD:
        raise errors.FrameError(
            f"a {kind.name} frame of {len(payload)} bytes exceeds {MAX_PAYLOAD}; "
            "emit smaller batches"
        )
    return [HEADER.pack(len(payload), kind, channel), payload]


def _payload(message: Message | types.Barrier, priority: bool) -> tuple[FrameKind, codec.Payload]:
    if isinstance(message, batch_mod.Batch):
        encoding, data = codec.encode_batch(message)
        kind = FrameKind.DATA_ARROW if encoding is codec.DataEncoding.ARROW else FrameKind.DATA_ROWS
        return kind, data
    if isinstance(message, types.Barrier):
        message = BarrierFrame(message, priority)
    if isinstance(message, BarrierFrame):
        b = message.barrier
        flags = (_UNALIGNED if b.unaligned else 0) | (_PRIORITY if message.priority else 0)
        kind_code = _KINDS.index(b.kind)
        return FrameKind.BARRIER, _BARRIER.pack(b.checkpoint_id, b.timestamp, kind_code, flags)
    if isinstance(message, messages.CancelMarker):
        return FrameKind.CANCEL, _U64.pack(message.checkpoint_id)
    if isinstance(message, messages.EndOfPartition):
        return FrameKind.END_OF_PARTITION, b""
    if isinstance(message, messages.WatermarkMarker):
        return FrameKind.WATERMARK, _I64.pack(message.value)
    if isinstance(message, messages.IdleMarker):
        return FrameKind.WATERMARK_STATUS, _U8.pack(1 if message.idle else 0)
    if isinstance(message, Credit):
        return FrameKind.CREDIT, _U32.pack(message.batches)
    if isinstance(message, Hello):
        head = _HELLO.pack(MAGIC, VERSION, message.sender, message.receiver)
        return FrameKind.HELLO, head + message.token.encode()
    if isinstance(message, Welcome):
        return FrameKind.WELCOME, _WELCOME.pack(
            MAGIC, VERSION, message.worker
        ) + message.token.encode()
    return FrameKind.REJECT, message.reason.encode()


def parse_header(header: bytes) -> tuple[int, FrameKind, int]:
    """``(payload length, kind, channel)`` of a frame header; FrameError if it is not one."""
    length, kind, channel = HEADER.unpack(header)
    if length > MAX_PAYLOAD:
        raise errors.FrameError(f"frame length {length} exceeds {MAX_PAYLOAD}: corrupt stream")
    try:
        return length, FrameKind(kind), channel
    except ValueError:
        raise errors.FrameError(f"unknown frame kind {kind}: corrupt stream") from None


def split(frame: bytes) -> tuple[FrameKind, int, bytes]:
    """``(kind, channel, payload)`` of one complete frame held in memory (tests, doctests)."""
    length, kind, channel = parse_header(frame[: HEADER.size])
    payload = frame[HEADER.size :]
    if len(payload) != length:
        raise errors.FrameError(f"frame says {length} payload bytes, has {len(payload)}")
    return kind, channel, payload


def decode(kind: FrameKind, channel: int, payload: bytes) -> tuple[int, Message]:
    """``(channel, message)`` of a frame; FrameError for a payload that does not parse."""
    try:
        return channel, _decode(kind, payload)
    except errors.FrameError:
        raise
    except Exception as exc:
        raise errors.FrameError(f"bad {kind.name} payload ({len(payload)} bytes): {exc}") from exc


def _decode(kind: FrameKind, payload: bytes) -> Message:
    if kind is FrameKind.DATA_ARROW:
        return codec.decode_batch(codec.DataEncoding.ARROW, payload)
    if kind is FrameKind.DATA_ROWS:
        return codec.decode_batch(codec.DataEncoding.ROWS, payload)
    if kind is FrameKind.BARRIER:
        cid, timestamp, kind_code, flags = _BARRIER.unpack(payload)
        barrier = types.Barrier(
            types.CheckpointId(cid),
            timestamp,
            _KINDS[kind_code],
            unaligned=bool(flags & _UNALIGNED),
        )
        return BarrierFrame(barrier, priority=bool(flags & _PRIORITY))
    if kind is FrameKind.CANCEL:
        (cid,) = _U64.unpack(payload)
        return messages.CancelMarker(types.CheckpointId(cid))
    if kind is FrameKind.END_OF_PARTITION:
        if payload:
            raise errors.FrameError("END_OF_PARTITION carries no payload")
        return messages.END_OF_PARTITION
    if kind is FrameKind.WATERMARK:
        return messages.WatermarkMarker(_I64.unpack(payload)[0])
    if kind is FrameKind.WATERMARK_STATUS:
        (status,) = _U8.unpack(payload)
        if status > 1:
            raise errors.FrameError(f"WATERMARK_STATUS {status} is neither 0 (active) nor 1 (idle)")
        return messages.IdleMarker(bool(status))
    if kind is FrameKind.CREDIT:
        return Credit(_U32.unpack(payload)[0])
    if kind is FrameKind.HELLO:
        magic, version, sender, receiver = _HELLO.unpack_from(payload)
        _check_magic(magic, version)
        return Hello(payload[_HELLO.size :].decode(), sender, receiver)
    if kind is FrameKind.WELCOME:
        magic, version, worker = _WELCOME.unpack_from(payload)
        _check_magic(magic, version)
        return Welcome(worker, payload[_WELCOME.size :].decode())
    return Reject(payload.decode(errors="replace"))


def _check_magic(magic: bytes, version: int) -> None:
    if magic != MAGIC:
        raise errors.FrameError(f"not a checkpointed-jobs channel peer (magic {magic!r})")
    if version != VERSION:
        raise errors.FrameError(f"channel protocol version {version}, this worker speaks {VERSION}")
