"""Signed driver↔worker frames: only the attempt's key, in order, in the right direction."""

from __future__ import annotations

import socket

import pytest

from barrier_runtime.spark import wire

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


def test_a_worker_without_the_key_is_refused_before_unpickling() -> None:
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
