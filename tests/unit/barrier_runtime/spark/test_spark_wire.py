"""Signed driver↔worker frames: only the attempt's key, in order, in the right direction."""

from __future__ import annotations

import socket

import pytest

from barrier_runtime import task_failure
from barrier_runtime.core import metadata, task_messages, task_metrics, types, values
from barrier_runtime.spark import messages, wire

KEY = wire.derive_key(b"attempt secret", "control")


def _pair(driver_key=KEY, worker_key=KEY):
    a, b = socket.socketpair()
    nonce = wire.new_nonce()
    driver = wire.FramedConnection(
        a, driver_key, nonce, outgoing=wire.TO_WORKER, incoming=wire.TO_DRIVER
    )
    worker = wire.FramedConnection(
        b, worker_key, nonce, outgoing=wire.TO_DRIVER, incoming=wire.TO_WORKER
    )
    return driver, worker


def test_messages_travel_both_ways_in_order() -> None:
    driver, worker = _pair()
    worker.send({"hello": 1})
    worker.send(("ack", 2))
    driver.send(["trigger", 3])
    assert driver.receive() == {"hello": 1}
    assert driver.receive() == ("ack", 2)
    assert worker.receive() == ["trigger", 3]
    worker.close()
    assert driver.receive() is None


def test_a_worker_without_the_key_is_refused_before_decoding() -> None:
    driver, intruder = _pair(worker_key=wire.derive_key(b"guess", "control"))
    intruder.send("os.system?")
    with pytest.raises(wire.AuthenticationError):
        driver.receive()


def test_replayed_and_reflected_frames_do_not_verify() -> None:
    nonce = wire.new_nonce()
    w_sock, tap_in = socket.socketpair()
    tap_out, d_sock = socket.socketpair()
    worker = wire.FramedConnection(
        w_sock, KEY, nonce, outgoing=wire.TO_DRIVER, incoming=wire.TO_WORKER
    )
    driver = wire.FramedConnection(
        d_sock, KEY, nonce, outgoing=wire.TO_WORKER, incoming=wire.TO_DRIVER
    )
    worker.send("ack 1")
    frame = tap_in.recv(1 << 16)
    tap_out.sendall(frame)
    assert driver.receive() == "ack 1"
    tap_out.sendall(frame)  # the same frame again: its sequence number is used up
    with pytest.raises(wire.AuthenticationError):
        driver.receive()

    other_driver, other_worker = _pair()
    other_driver.send("shutdown")
    reflected = other_worker.sock.recv(1 << 16)
    other_worker.sock.sendall(reflected)  # the driver's own frame played back to it
    with pytest.raises(wire.AuthenticationError):
        other_driver.receive()


def test_the_handshake_gives_both_ends_the_same_nonce() -> None:
    a, b = socket.socketpair()
    driver = wire.accept_side(a, KEY)
    worker = wire.connect_side(b, KEY)
    worker.send("hello")
    assert driver.receive() == "hello"


def test_sub_keys_differ_by_purpose() -> None:
    secret = b"s" * 32
    assert wire.derive_key(secret, "control") != wire.derive_key(secret, "data-plane")


def _every_message() -> list[object]:
    task = metadata.TaskKey(types.TaskId("count"), 1)
    handle = metadata.StateHandle(
        types.StepId("count"),
        1,
        "checkpoints/chk-1/count/1.arrow",
        10,
        "ab" * 32,
        metadata.HandleKind.KEYED,
        0,
        63,
    )
    ack = metadata.TaskAcknowledgement(
        types.CheckpointId(3),
        task,
        (handle,),
        {types.StepId("inp"): {"p-0": [1, "x"]}},
        {types.StepId("out"): ({"txn": 1},)},
        metadata.AckMetrics(0.1, 0.2, 0.0, 10, 0),
    )
    meta = metadata.CheckpointMetadata(
        types.CheckpointId(3),
        types.CheckpointKind.SAVEPOINT,
        1.0,
        2.0,
        metadata.JobFingerprint((types.StepId("count"),), 128, 2),
        (handle,),
    )
    metrics = task_metrics.AttemptMetrics({"count": 5}, {"count": 4}, {"count": 0.5}, {})
    failure = task_failure.TaskFailure(task_failure.FailureClass.RECORD, "E: x", "f", "map", "tb")
    return [
        messages.Hello(1, 0, 42, "127.0.0.1", "127.0.0.1:4000"),
        messages.Peers(1, ("127.0.0.1:4000", "[::1]:4001")),
        messages.Running(),
        messages.Running((("imports", 1.5), ("running", 2.25))),
        messages.Ack(ack),
        messages.Decline(types.CheckpointId(3), task, types.FailureReason.TIMEOUT),
        messages.TaskFinished(task),
        messages.Metrics(metrics),
        messages.Failed(task, "E: x", True, failure),
        messages.Failed(None, "E: y"),
        messages.Bye(metrics),
        messages.Post(task_messages.TriggerCheckpoint(types.Barrier(types.CheckpointId(3), 1.5))),
        messages.Post(task_messages.CheckpointCompleted(meta)),
        messages.Post(
            task_messages.CheckpointAborted(types.CheckpointId(3), types.FailureReason.SUBSUMED)
        ),
        messages.Post(task_messages.Shutdown()),
    ]


@pytest.mark.parametrize("message", _every_message(), ids=lambda m: type(m).__name__)
def test_every_message_crosses_the_wire_exactly(message: object) -> None:
    driver, worker = _pair()
    worker.send(message)
    assert driver.receive() == message


def test_a_signed_frame_can_only_build_registered_message_types() -> None:
    driver, worker = _pair()
    worker.send(b"\x80\x05N.")  # bytes are fine, and stay bytes
    assert driver.receive() == b"\x80\x05N."
    payload = b'{"\\u0000o":["Popen",{"args":"id"}]}'
    header = wire._HEADER.pack(len(payload), worker._mac(wire.TO_DRIVER, 1, payload))
    worker.sock.sendall(header + payload)
    with pytest.raises(wire.MalformedFrameError, match="Popen") as refused:
        driver.receive()
    assert isinstance(refused.value.__cause__, values.UnknownValueTypeError)
