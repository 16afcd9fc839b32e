"""Test helpers for network channels: a task-like producer and consumer, and peer processes.

:func:`produce` and :func:`consume` drive channel endpoints the way a
subtask does (put, then wait on the task's signal for capacity; take until
end of partition). :func:`run_peer` and :func:`run_flooding_peer` are the
bodies of worker processes started with ``multiprocessing`` (spawn), so they
live in an importable module rather than in a test file.

>>> rows = sequence_rows(worker=1, start=0, count=3)
>>> [r["seq"] for r in rows]
[0, 1, 2]
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from typing import Any, Protocol

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.channels import endpoints, messages, network

TOKEN = "job-7/attempt-2/5f1d"
"""A job attempt token for tests."""


class Signal(Protocol):
    """The task signal these helpers sleep on (``barrier_runtime.task.channel.Signal``)."""

    cond: threading.Condition

    def notify(self) -> None: ...


class TaskSignal:
    """A stand-in for ``local.channel.Signal`` that also counts notifications."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.notifications = 0

    def notify(self) -> None:
        with self.cond:
            self.notifications += 1
            self.cond.notify_all()


def sequence_rows(worker: int, start: int, count: int) -> list[dict[str, Any]]:
    return [
        {"src": worker, "seq": i, "text": f"w{worker}-r{i}"} for i in range(start, start + count)
    ]


@dataclass
class ProducerStats:
    batches: int = 0
    backpressure_waits: int = 0
    """Times ``has_capacity()`` was False after a put (the task had to wait)."""
    max_queued: int = 0
    """Most data batches ever queued at the sender."""


def produce(
    out: endpoints.RemoteOutputChannel,
    signal: Signal,
    batches: Iterable[batch_mod.Batch],
    *,
    timeout: float = 30.0,
    on_blocked: Callable[[], None] | None = None,
    end: bool = True,
) -> ProducerStats:
    """Put each batch as a subtask does (put, wait for capacity), then END_OF_PARTITION."""
    stats = ProducerStats()
    deadline = time.monotonic() + timeout
    for batch in batches:
        out.put(batch)
        stats.batches += 1
        stats.max_queued = max(stats.max_queued, out.queued_batches)
        if not out.has_capacity():
            stats.backpressure_waits += 1
            if on_blocked is not None:
                on_blocked()
        while not out.has_capacity():
            if time.monotonic() > deadline:
                raise TimeoutError(f"no capacity on channel {out.channel} within {timeout}s")
            with signal.cond:
                if not out.has_capacity():
                    signal.cond.wait(0.05)
    if end:
        out.put(messages.END_OF_PARTITION)
    return stats


@dataclass
class ConsumerStats:
    items: list[endpoints.Item] = field(default_factory=list)
    max_queued: int = 0


def consume(
    inp: endpoints.RemoteInputChannel,
    signal: Signal,
    *,
    timeout: float = 30.0,
    keep: bool = True,
    on_batch: Callable[[batch_mod.Batch], None] | None = None,
) -> ConsumerStats:
    """Take items until END_OF_PARTITION (included), sleeping on ``signal`` when empty."""
    stats = ConsumerStats()
    deadline = time.monotonic() + timeout
    while True:
        stats.max_queued = max(stats.max_queued, inp.queued_batches)
        item = inp.take()
        if item is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"channel {inp.channel} did not end within {timeout}s")
            with signal.cond:
                if len(inp) == 0:
                    signal.cond.wait(0.05)
            continue
        if keep or not isinstance(item, batch_mod.Batch):
            stats.items.append(item)
        if isinstance(item, batch_mod.Batch) and on_batch is not None:
            on_batch(item)
        if isinstance(item, messages.EndOfPartition):
            return stats


class SequenceChecker:
    """Checks that one sender's ``seq`` values arrive complete and in order."""

    def __init__(self) -> None:
        self.next = 0

    def __call__(self, batch: batch_mod.Batch) -> None:
        column = batch.to_arrow().column("seq").to_pylist()
        if column != list(range(self.next, self.next + len(column))):
            raise AssertionError(f"expected seq from {self.next}, got {column[:5]}…")
        self.next += len(column)


def _batches(worker: int, records: int, rows_per_batch: int) -> Iterable[batch_mod.Batch]:
    for start in range(0, records, rows_per_batch):
        count = min(rows_per_batch, records - start)
        yield batch_mod.Batch.from_rows(sequence_rows(worker, start, count))


def run_peer(
    parent: Connection,
    token: str,
    records: int,
    rows_per_batch: int,
    capacity: int,
    blocked: Event,
    peer_blocked: Event,
) -> None:
    """Worker 1 of 2: exchange ``records`` records with worker 0 both ways; report stats.

    Protocol on ``parent``: send our address, receive the peer map, send a
    result dict at the end. Our producer sets ``blocked`` the first time it
    is back-pressured; our consumer takes nothing until ``peer_blocked`` is
    set, which guarantees the peer's producer meets back-pressure.
    """
    with network.WorkerNetwork(1, 2, token) as net:
        parent.send(net.address)
        peers = parent.recv()
        net.connect(peers)
        signal = TaskSignal()
        out = net.output_channel(1, peer=0, sender=signal)
        inp = net.input_channel(0, peer=0, receiver=signal, capacity=capacity)
        net.wait_for_peers()
        result: dict[str, Any] = {}

        def send() -> None:
            stats = produce(
                out, signal, _batches(1, records, rows_per_batch), on_blocked=blocked.set
            )
            result["producer"] = (stats.batches, stats.backpressure_waits, stats.max_queued)

        sender = threading.Thread(target=send)
        sender.start()
        peer_blocked.wait(30)
        checker = SequenceChecker()
        stats = consume(inp, signal, keep=False, on_batch=checker)
        sender.join(30)
        result["received"] = checker.next
        result["consumer_max_queued"] = stats.max_queued
        parent.send(result)


def run_flooding_peer(parent: Connection, token: str, peer_address: str) -> None:
    """Worker 1 of 2: connect to worker 0 and send batches until killed."""
    with network.WorkerNetwork(1, 2, token) as net:
        net.connect({0: peer_address})
        signal = TaskSignal()
        out = net.output_channel(1, peer=0, sender=signal)
        net.input_channel(0, peer=0, receiver=signal, capacity=2)
        parent.send(net.address)
        produce(out, signal, _batches(1, 10**9, 100), timeout=3600, end=False)


def consume_available(
    inp: endpoints.RemoteInputChannel, signal: Signal, batches: int, *, timeout: float = 10.0
) -> list[batch_mod.Batch]:
    """Take exactly ``batches`` data batches (markers are an error), waiting for arrivals."""
    got: list[batch_mod.Batch] = []
    deadline = time.monotonic() + timeout
    while len(got) < batches:
        item = inp.take()
        if isinstance(item, batch_mod.Batch):
            got.append(item)
            continue
        if item is not None:
            raise AssertionError(f"expected data, got {item!r}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {len(got)} of {batches} batches within {timeout}s")
        with signal.cond:
            if len(inp) == 0:
                signal.cond.wait(0.05)
    return got
