"""Two real OS processes (multiprocessing spawn): a 100k-record exchange, and a killed peer."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from typing import Any

import pytest
import waiting
from barrier_runtime_testing import channels as testing

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.channels import errors, network

TOKEN = testing.TOKEN
pytestmark = pytest.mark.timeout(60)
SPAWN = multiprocessing.get_context("spawn")


def stop(child: multiprocessing.process.BaseProcess, timeout: float) -> None:
    """Wait for the child; kill it if it outlives a failed test."""
    child.join(timeout)
    if child.is_alive():
        child.kill()
        child.join(5)


def test_two_processes_exchange_100k_records_each_way_under_back_pressure() -> None:
    records, rows_per_batch, capacity = 100_000, 250, 4
    parent_end, child_end = SPAWN.Pipe()
    child_blocked, parent_blocked = SPAWN.Event(), SPAWN.Event()
    child = SPAWN.Process(
        target=testing.run_peer,
        args=(child_end, TOKEN, records, rows_per_batch, capacity, child_blocked, parent_blocked),
    )
    child.start()
    try:
        with network.WorkerNetwork(0, 2, TOKEN) as net:
            assert parent_end.poll(30), "the child did not report its address"
            peers = {0: net.address, 1: parent_end.recv()}
            parent_end.send(peers)
            net.connect(peers)
            task_signal = testing.TaskSignal()
            out = net.output_channel(0, peer=1, sender=task_signal)
            inp = net.input_channel(1, peer=1, receiver=task_signal, capacity=capacity)
            net.wait_for_peers()
            started = time.perf_counter()
            produced: list[testing.ProducerStats] = []
            batches = (
                batch_mod.Batch.from_rows(testing.sequence_rows(0, s, rows_per_batch))
                for s in range(0, records, rows_per_batch)
            )
            sender = threading.Thread(
                target=lambda: produced.append(
                    testing.produce(out, task_signal, batches, on_blocked=parent_blocked.set)
                )
            )
            sender.start()
            assert child_blocked.wait(30), "the child's producer never met back-pressure"
            checker = testing.SequenceChecker()
            consumed = testing.consume(inp, task_signal, keep=False, on_batch=checker)
            sender.join(30)
            assert parent_end.poll(30), "the child did not report its result"
            result: dict[str, Any] = parent_end.recv()
            elapsed = time.perf_counter() - started
    finally:
        stop(child, 30)
    assert child.exitcode == 0
    assert checker.next == records and result["received"] == records
    child_batches, child_waits, child_max_queued = result["producer"]
    assert child_batches == records // rows_per_batch and child_waits >= 1
    assert produced[0].backpressure_waits >= 1
    assert consumed.max_queued <= capacity and result["consumer_max_queued"] <= capacity
    assert produced[0].max_queued <= capacity + 1 and child_max_queued <= capacity + 1
    print(
        f"\n2 processes: {2 * records:,} records in {elapsed:.2f}s "
        f"({2 * records / elapsed:,.0f} records/s both ways); back-pressure waits: "
        f"parent {produced[0].backpressure_waits}, child {child_waits}"
    )


def test_a_killed_peer_process_fails_our_channels_promptly() -> None:
    parent_end, child_end = SPAWN.Pipe()
    with network.WorkerNetwork(0, 2, TOKEN) as net:
        child = SPAWN.Process(
            target=testing.run_flooding_peer, args=(child_end, TOKEN, net.address)
        )
        child.start()
        try:
            assert parent_end.poll(30), "the child did not report its address"
            net.connect({1: parent_end.recv()})
            task_signal = testing.TaskSignal()
            inp = net.input_channel(1, peer=1, receiver=task_signal, capacity=2)
            out = net.output_channel(0, peer=1, sender=task_signal)
            waiting.wait_until(
                lambda: inp.queued_batches == 2 and out.has_capacity(),
                30,
                "inp.queued_batches == 2 and out.has_capacity()",
            )
            assert child.pid is not None
            os.kill(child.pid, signal.SIGKILL)
            killed = time.monotonic()
            with pytest.raises(
                errors.ChannelClosedError, match=r"channel 1 with worker 1 .*"
            ) as info:
                while True:  # a task's loop: take what is there, sleep on the signal otherwise
                    inp.take()
                    with task_signal.cond:
                        task_signal.cond.wait(0.05)
            detected = time.monotonic() - killed
            with pytest.raises(errors.ChannelClosedError, match="channel 0 with worker 1"):
                waiting.wait_until(
                    lambda: not out.has_capacity() and False, 5, "the channel to fail"
                )
        finally:
            stop(child, 10)
    print(f"\npeer death detected after {detected * 1000:.1f} ms: {info.value}")
