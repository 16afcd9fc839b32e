"""Two WorkerNetworks over loopback: ordering, credits, priority barriers, end, failures."""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
from collections.abc import Iterator, Sequence

import pytest
import waiting
from barrier_runtime_testing import channels as testing

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.channels import errors, frames, messages, network, wire
from barrier_runtime.core import types
from barrier_runtime.task import channel as local_channel

TOKEN = testing.TOKEN
pytestmark = pytest.mark.timeout(60)
Pair = tuple[network.WorkerNetwork, network.WorkerNetwork]


def batch(*seqs: int) -> batch_mod.Batch:
    return batch_mod.Batch.from_rows([{"seq": s} for s in seqs])


def seqs(items: Sequence[object]) -> list[int]:
    return [r["seq"] for b in items if isinstance(b, batch_mod.Batch) for r in b.rows()]


def test_many_logical_channels_deliver_in_order_both_ways(pair: Pair) -> None:
    a, b = pair
    signal_a, signal_b = local_channel.Signal(), local_channel.Signal()
    channels = range(1, 9)
    outs = [a.output_channel(c, 1, signal_a) for c in channels]
    outs += [b.output_channel(c, 0, signal_b) for c in channels]  # same ids, other direction
    ins = [b.input_channel(c, 0, signal_b, capacity=3) for c in channels]
    ins += [a.input_channel(c, 1, signal_a, capacity=3) for c in channels]
    results: dict[int, testing.ConsumerStats] = {}

    def consume(i: int) -> None:
        results[i] = testing.consume(ins[i], signal_a if i >= 8 else signal_b)

    def produce(i: int) -> None:
        signal = signal_a if i < 8 else signal_b
        marker = types.Barrier(types.CheckpointId(1), 0.0)
        batches = [batch(*range(i * 1000 + s * 10, i * 1000 + s * 10 + 10)) for s in range(40)]
        outs[i].put(messages.CancelMarker(types.CheckpointId(0)))
        testing.produce(outs[i], signal, batches[:20], end=False)
        outs[i].put(marker)
        testing.produce(outs[i], signal, batches[20:])

    threads = [threading.Thread(target=f, args=(i,)) for i in range(16) for f in (consume, produce)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for i in range(16):
        items = results[i].items
        assert seqs(items) == list(range(i * 1000, i * 1000 + 400))
        assert items[0] == messages.CancelMarker(types.CheckpointId(0))
        assert items[21] == types.Barrier(types.CheckpointId(1), 0.0)
        assert items[-1] == messages.END_OF_PARTITION


def test_a_slow_receiver_back_pressures_the_sender_and_memory_stays_bounded(pair: Pair) -> None:
    a, b = pair
    signal_a, signal_b = testing.TaskSignal(), testing.TaskSignal()
    out = a.output_channel(1, 1, signal_a)
    assert not out.has_capacity()  # closed until the receiver registers and grants credits
    inp = b.input_channel(1, 0, signal_b, capacity=4)
    produced: list[int] = []
    blocked = threading.Event()

    def batches() -> Iterator[batch_mod.Batch]:
        for s in range(60):
            produced.append(s)
            yield batch(s)

    stats: list[testing.ProducerStats] = []
    producer = threading.Thread(
        target=lambda: stats.append(
            testing.produce(out, signal_a, batches(), on_blocked=blocked.set)
        )
    )
    producer.start()
    assert blocked.wait(10)
    waiting.wait_until(lambda: inp.queued_batches == 4, 10, "inp.queued_batches == 4")
    time.sleep(0.05)  # give a buggy sender the chance to overrun; nothing may change
    assert not out.has_capacity()
    assert inp.queued_batches == 4, "the receiver never holds more than its granted credits"
    assert out.queued_batches <= 1 and len(produced) <= 4 + 1  # credits + one overdraft

    checker = testing.SequenceChecker()

    def check(b: batch_mod.Batch) -> None:
        assert out.queued_batches + inp.queued_batches <= 4 + 1, "credits + one overdraft"
        checker(b)

    consumed = testing.consume(inp, signal_b, keep=False, on_batch=check)
    producer.join(10)
    assert checker.next == 60 and consumed.max_queued <= 4
    assert stats[0].backpressure_waits >= 1


def test_priority_barrier_overtakes_sender_and_receiver_queues_and_both_sets_are_exact(
    pair: Pair,
) -> None:
    a, b = pair
    signal_a, signal_b = testing.TaskSignal(), testing.TaskSignal()
    out = a.output_channel(3, 1, signal_a)
    inp = b.input_channel(3, 0, signal_b, capacity=3)
    for s in range(5):
        out.put(batch(s))
    waiting.wait_until(
        lambda: inp.queued_batches == 3 and out.queued_batches == 2,
        10,
        "inp.queued_batches == 3 and out.queued_batches == 2",
    )
    assert seqs([inp.take()]) == [0]
    waiting.wait_until(
        lambda: inp.queued_batches == 3 and out.queued_batches == 1,
        10,
        "inp.queued_batches == 3 and out.queued_batches == 1",
    )
    out.put(batch(5))
    b7 = types.Barrier(types.CheckpointId(7), 1.0, unaligned=True)
    sender_overtaken = out.put_priority(b7)
    waiting.wait_until(lambda: inp.peek() == b7, 10, "inp.peek() == b7")
    assert seqs(sender_overtaken) == [4, 5]
    assert inp.take() == b7
    assert seqs(inp.drain_overtaken(b7.checkpoint_id)) == [1, 2, 3]
    rest = testing.consume_available(inp, signal_b, 5)
    assert seqs(rest) == [1, 2, 3, 4, 5], "overtaken data is still delivered, after the barrier"


def test_end_of_partition_then_graceful_close_raises_nothing(pair: Pair) -> None:
    a, b = pair
    signal_a, signal_b = testing.TaskSignal(), testing.TaskSignal()
    out = a.output_channel(1, 1, signal_a)
    inp = b.input_channel(1, 0, signal_b, capacity=2)
    for s in range(6):  # more than the credits: close() must flush them
        out.put(batch(s))
    out.put(messages.END_OF_PARTITION)
    closer = threading.Thread(target=a.close)
    closer.start()
    stats = testing.consume(inp, signal_b)
    closer.join(10)
    assert seqs(stats.items) == list(range(6))
    assert stats.items[-1] == messages.END_OF_PARTITION
    assert out.finished and out.has_capacity()
    assert inp.ended and inp.take() is None and len(inp) == 0


def test_a_peer_closing_mid_stream_fails_the_channels_naming_it(pair: Pair) -> None:
    a, b = pair
    signal_a, signal_b = testing.TaskSignal(), testing.TaskSignal()
    out = a.output_channel(1, 1, signal_a)
    inp = b.input_channel(1, 0, signal_b, capacity=2)
    back = b.output_channel(2, 0, signal_b)
    a.input_channel(2, 1, signal_a, capacity=2)
    out.put(batch(1))
    waiting.wait_until(lambda: len(inp) == 1, 10, "len(inp) == 1")
    before = signal_b.notifications
    a.abort()  # as if worker 0 died
    waiting.wait_until(
        lambda: signal_b.notifications > before, 10, "signal_b.notifications > before"
    )  # the receiving task is woken
    with pytest.raises(errors.ChannelClosedError, match=r"channel 1 with worker 0 \(127\.0\.0\.1:"):
        waiting.wait_until(lambda: inp.take() is None and False, 5, "the channel to fail")
    with pytest.raises(errors.ChannelClosedError, match="channel 2 with worker 0"):
        waiting.wait_until(lambda: not back.has_capacity() and False, 5, "the channel to fail")


@pytest.mark.parametrize("shutdown_arrived", [False, True])
def test_a_peer_leaving_after_the_shutdown_is_not_warned_about(
    pair: Pair, shutdown_arrived: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """Once the attempt's ``Shutdown`` arrived (``expect_close``), a peer whose subtasks
    left first closing its connections is expected: logged quietly, not as a warning. The
    channels still fail, so a subtask that reads or sends on them learns it."""
    a, b = pair
    signal_b = testing.TaskSignal()
    inp = b.input_channel(1, 0, signal_b, capacity=2)
    a.output_channel(1, 1, testing.TaskSignal())
    if shutdown_arrived:
        b.expect_close()
    caplog.set_level("DEBUG", logger="barrier_runtime.channels.connection")
    a.abort()
    with pytest.raises(errors.ChannelClosedError, match="channel 1 with worker 0"):
        waiting.wait_until(lambda: inp.take() is None and False, 5, "the channel to fail")

    # The link that carried the channel; worker 1's outbound link to worker 0 has no
    # channels, so its close is quiet either way. The link logs after it fails its
    # channels, hence the wait.
    def closed() -> list[logging.LogRecord]:
        wanted = "worker 1: connection from worker 0"
        return [r for r in caplog.records if wanted in r.getMessage()]

    waiting.wait_until(lambda: bool(closed()), 5, "the link's close to be logged")
    levels = {r.levelname for r in closed()}
    assert levels == ({"DEBUG"} if shutdown_arrived else {"WARNING"}), caplog.text


def test_a_reset_connection_fails_the_sender_at_once() -> None:
    """A hand-made peer that welcomes us, grants credits, then resets the connection."""
    listener = socket.create_server(("127.0.0.1", 0))

    def fake_peer() -> None:
        sock, _ = listener.accept()
        reader = wire.FrameReader(sock)
        frame = reader.read()
        assert frame is not None and isinstance(frames.decode(*frame)[1], frames.Hello)
        wire.send_buffers(sock, frames.encode(0, frames.Welcome(1, TOKEN)))
        wire.send_buffers(sock, frames.encode(1, frames.Credit(1)))
        frame = reader.read()  # the one batch the credit allowed
        assert frame is not None and frame[0] is frames.FrameKind.DATA_ARROW
        reader.close()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # linger 0: the kernel sends RST

    peer = threading.Thread(target=fake_peer)
    peer.start()
    with network.WorkerNetwork(0, 2, TOKEN) as a:
        signal = testing.TaskSignal()
        out = a.output_channel(1, 1, signal)
        a.connect({1: network.format_address(*listener.getsockname())}, timeout=5)
        out.put(batch(1))
        peer.join(10)
        with pytest.raises(
            errors.ChannelClosedError, match=r"channel 1 with worker 1 .*(reset|closed)"
        ):
            waiting.wait_until(lambda: out.has_capacity() and False, 5, "the channel to fail")
    listener.close()


def test_a_worker_of_another_attempt_is_rejected() -> None:
    with (
        network.WorkerNetwork(0, 2, TOKEN) as current,
        network.WorkerNetwork(1, 2, "job-7/attempt-1/0000") as stale,
    ):
        with pytest.raises(errors.HandshakeRejectedError, match="another job attempt"):
            stale.connect({0: current.address}, timeout=5)
        with pytest.raises(errors.HandshakeRejectedError, match="another job attempt"):
            current.connect({1: stale.address}, timeout=5)  # nor may we feed a stale worker
        with pytest.raises(errors.PeerUnreachableError, match=r"workers \[1\] did not connect"):
            current.wait_for_peers(timeout=0.2)


@pytest.mark.parametrize(
    ("hello", "reason"),
    [
        (frames.Hello(TOKEN, sender=1, receiver=2), "this is worker 0, not worker 2"),
        (frames.Hello(TOKEN, sender=5, receiver=0), "no worker 5 in a job of 2 workers"),
        (frames.Hello(TOKEN, sender=1, receiver=0), "worker 1 is connected already"),
    ],
)
def test_wrong_or_duplicate_introductions_are_rejected(
    pair: Pair, hello: frames.Hello, reason: str
) -> None:
    a, _ = pair
    with socket.create_connection(network.parse_address(a.address), timeout=5) as sock:
        wire.send_buffers(sock, frames.encode(0, hello))
        frame = wire.FrameReader(sock).read()
    assert frame is not None
    assert frames.decode(*frame)[1] == frames.Reject(reason)


def test_connect_retries_until_its_timeout_and_names_the_unreachable_peer() -> None:
    with network.WorkerNetwork(0, 2, TOKEN) as a:
        probe = socket.create_server(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()  # nothing listens there now
        started = time.monotonic()
        with pytest.raises(errors.PeerUnreachableError, match=f"worker 1 \\(127.0.0.1:{port}\\)"):
            a.connect({1: f"127.0.0.1:{port}"}, timeout=0.5)
        assert time.monotonic() - started < 5


def run_throughput(
    a: network.WorkerNetwork, b: network.WorkerNetwork, channel: int, batches: list[batch_mod.Batch]
) -> tuple[float, testing.ProducerStats]:
    signal_a, signal_b = testing.TaskSignal(), testing.TaskSignal()
    out = a.output_channel(channel, 1, signal_a)
    inp = b.input_channel(channel, 0, signal_b, capacity=8)
    consumed: list[testing.ConsumerStats] = []
    started = time.perf_counter()
    consumer = threading.Thread(
        target=lambda: consumed.append(testing.consume(inp, signal_b, keep=False))
    )
    consumer.start()
    produced = testing.produce(out, signal_a, batches)
    consumer.join(30)
    assert consumed[0].items == [messages.END_OF_PARTITION]  # only markers are kept
    return time.perf_counter() - started, produced


def test_throughput_figures(pair: Pair) -> None:
    """Not a timing assertion: prints records/s and MB/s for the report."""
    a, b = pair
    n_batches, rows_per_batch = 1000, 1000
    rows = testing.sequence_rows(0, 0, rows_per_batch)
    arrow = batch_mod.Batch.from_rows(rows).to_arrow()
    cases = {
        "Python rows (sender converts to Arrow)": [
            batch_mod.Batch.from_rows(rows) for _ in range(n_batches // 5)
        ],
        "Arrow batches": [batch_mod.Batch.from_arrow(arrow) for _ in range(n_batches)],
    }
    for channel, (label, batches) in enumerate(cases.items(), start=10):
        elapsed, produced = run_throughput(a, b, channel, batches)
        records = len(batches) * rows_per_batch
        size = arrow.nbytes * len(batches) / 1e6
        print(
            f"\n{label}: {records / elapsed:,.0f} records/s, {size / elapsed:,.0f} MB/s "
            f"({len(batches)} batches of {rows_per_batch} rows in {elapsed:.2f}s, "
            f"{produced.backpressure_waits} back-pressure waits)"
        )


def test_a_batch_that_cannot_be_encoded_fails_the_connection_with_a_clear_reason(
    pair: Pair,
) -> None:
    a, b = pair
    out = a.output_channel(1, 1, testing.TaskSignal())
    b.input_channel(1, 0, testing.TaskSignal(), capacity=2)
    out.put(batch_mod.Batch.from_rows([{"f": lambda: None}]))  # not picklable
    with pytest.raises(errors.ChannelClosedError, match="cannot encode a frame"):
        waiting.wait_until(lambda: out.has_capacity() and False, 5, "the channel to fail")


def test_ipv6_loopback_works_when_available() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        a = network.WorkerNetwork(0, 2, TOKEN, host="::1")
    except OSError:
        pytest.skip("IPv6 loopback not configured")
    with a, network.WorkerNetwork(1, 2, TOKEN, host="::1") as b:
        assert a.address.startswith("[::1]:")
        b.connect({0: a.address})
        a.wait_for_peers(timeout=5)
