"""The attempt hands out the peers' addresses once every worker said Hello, over real TCP.

The driver side only: a :class:`RemoteAttempt` behind a real coordinator
server, with "workers" that are signed connections speaking the protocol by
hand (no worker runs, nothing is launched).
"""

from __future__ import annotations

import socket

import pytest
from waiting import wait_until

from barrier_runtime.api import Dataflow
from barrier_runtime.core.clock import ManualClock
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.graph import plan as plan_mod
from barrier_runtime.spark import attempt, config, coordinator_server, messages, pipeline, wire
from barrier_runtime.spark.peer_registry import RendezvousTimeoutError
from barrier_runtime.testing import TestingSink, TestingSource

P = 2


class _NoStage:
    def cancel(self) -> None:
        pass

    def join(self, timeout: float) -> bool:
        return True


class _NoLauncher:
    def launch(self, config: object, on_end: object) -> _NoStage:
        return _NoStage()


@pytest.fixture
def server():
    with coordinator_server.CoordinatorServer() as srv:
        yield srv


def _attempt(server, number: int = 1, clock=None) -> attempt.RemoteAttempt:
    flow = Dataflow("rendezvous")
    flow.source("events", TestingSource([{"k": 1}])).key_by("by", "k").sink("out", TestingSink())
    plan = plan_mod.plan(flow, P)
    cfg = config.WorkerConfig(
        attempt=0,
        secret=b"",
        driver_address=server.address,
        pipeline=pipeline.PipelineRef.parse("barrier_runtime.demo", []),
        parallelism=P,
        fingerprint=plan.fingerprint(),
        checkpoint=CheckpointConfig(),
        store=config.StoreRef("/tmp/unused", "j"),
        restore_point=None,
        connect_timeout=30.0,
    )
    run = attempt.RemoteAttempt(
        number,
        plan=plan,
        worker_config=cfg,
        launcher=_NoLauncher(),
        server=server,
        acknowledge=lambda ack: None,
        decline=lambda *a: None,
        clock=clock,
    )
    run.start()
    return run


def _hello(server, run, worker: int, address: str, attempt_number: int | None = None):
    host, port = server.address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=5)
    conn = wire.connect_side(sock, run.key)
    number = run.number if attempt_number is None else attempt_number
    conn.send(messages.Hello(number, worker, 100 + worker, "127.0.0.1", address))
    return conn


def test_every_worker_gets_all_addresses_once_the_last_one_said_hello(server) -> None:
    run = _attempt(server)
    first = _hello(server, run, 1, "127.0.0.1:5001")
    wait_until(lambda: run.worker_pids, 5, "worker 1 registered")
    first.sock.settimeout(0.2)
    with pytest.raises(TimeoutError):
        first.receive()  # nothing before every worker registered
    second = _hello(server, run, 0, "127.0.0.1:5000")
    second.sock.settimeout(5)
    expected = messages.Peers(1, ("127.0.0.1:5000", "127.0.0.1:5001"))
    assert second.receive() == expected
    third = _hello(server, run, 0, "127.0.0.1:6000")  # a duplicate: refused, not re-sent
    third.sock.settimeout(5)
    assert third.receive() is None
    for conn in (first, second, third):
        conn.close()
    run.stop()


def test_a_worker_of_an_older_attempt_is_refused_and_never_listed(server) -> None:
    run = _attempt(server, number=3)
    stale = _hello(server, run, 0, "127.0.0.1:7000", attempt_number=2)
    stale.sock.settimeout(5)
    assert stale.receive() is None  # refused: the server closed the connection
    workers = [_hello(server, run, i, f"127.0.0.1:{5000 + i}") for i in range(P)]
    for conn in workers:
        conn.sock.settimeout(5)
        assert conn.receive() == messages.Peers(3, ("127.0.0.1:5000", "127.0.0.1:5001"))
    assert run.failure is None
    run.stop()
    for conn in workers:
        conn.close()


def test_a_rendezvous_that_never_completes_fails_the_attempt_with_one_clear_error(
    server,
) -> None:
    clock = ManualClock()
    run = _attempt(server, clock=clock)
    lonely = _hello(server, run, 0, "127.0.0.1:5000")
    wait_until(lambda: run.worker_pids, 5, "worker 0 registered")
    clock.advance(30.0)
    run.wait(0.0)  # the driver loop's wait checks the deadline
    assert isinstance(run.failure, RendezvousTimeoutError)
    assert "worker(s) [1] of attempt 1 did not register" in str(run.failure)
    run.stop()
    lonely.sock.settimeout(5)
    assert lonely.receive() is None  # the waiting worker is released (its wait ends)
    lonely.close()
