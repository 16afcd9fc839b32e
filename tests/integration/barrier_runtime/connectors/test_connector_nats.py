"""NATS JetStream source and sink against a real ``nats-server -js`` on loopback.

The source reads by stream sequence and resumes after a checkpointed
sequence; the sink publishes with ``Nats-Msg-Id`` so re-commits are dropped
by the server; and a keyed running count NATS → NATS survives injected
crashes with zero lost, duplicated and out-of-order results.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid

import pyarrow as pa
import pytest
import waiting
from barrier_runtime_testing.processes import alive

pytest.importorskip("nats", reason="the NATS connector needs nats-py")

from barrier_runtime.api import Dataflow
from barrier_runtime.connectors import nats as nats_conn
from barrier_runtime.connectors.embedded_nats import EmbeddedNatsServer
from barrier_runtime.connectors.errors import (
    ConnectorError,
    MalformedRecordError,
    TransactionTooLargeError,
)
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.demo import count_event
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import (
    Crash,
    FaultInjector,
    FaultPoint,
    LocalExecutor,
    check_exactly_once,
)


def publish(url: str, messages: list[tuple[str, bytes]]) -> None:
    """Publish to JetStream with nats-py directly (independent of the sink under test)."""
    import nats

    async def run() -> None:
        client = await nats.connect(url)
        js = client.jetstream()
        futures = [await js.publish_async(subject, data) for subject, data in messages]
        await asyncio.gather(*futures)
        await client.close()

    asyncio.run(run())


def stream_name() -> str:
    return f"S{uuid.uuid4().hex[:8].upper()}"


def drain(part, *, limit: float = 20.0) -> list[dict]:
    """Every record a bounded partition returns until it ends."""
    rows: list[dict] = []
    deadline = time.monotonic() + limit
    while (batch := part.next_batch()) is not None:
        rows.extend(batch)
        assert time.monotonic() < deadline, "a bounded partition never ended"
    return rows


def read_stream(url: str, stream: str) -> list[dict]:
    part = nats_conn.NatsSource(url, stream, bounded=True).open(stream, None)
    try:
        return drain(part)
    finally:
        part.close()


def test_source_reads_by_sequence_and_resumes_after_a_checkpointed_sequence(nats_server) -> None:
    url, stream = nats_server.url, stream_name()
    nats_conn.ensure_stream(url, stream, [f"{stream}.>"])
    publish(url, [(f"{stream}.{'ab'[i % 2]}", json.dumps({"i": i}).encode()) for i in range(40)])

    whole = nats_conn.NatsSource(url, stream, bounded=True, batch_size=7, include_metadata=True)
    assert whole.partitions() == [stream]
    part = whole.open(stream, None)
    first = part.next_batch()
    assert [r["_seq"] for r in first] == list(range(1, 8))
    assert part.snapshot() == 7
    part.close()

    resumed = whole.open(stream, 7)  # as after a restore from a checkpoint holding 7
    rest = drain(resumed)
    assert resumed.snapshot() == 40
    resumed.close()
    assert [r["i"] for r in first + rest] == list(range(40))

    by_subject = nats_conn.NatsSource(
        url, stream, subjects=[f"{stream}.a", f"{stream}.b"], bounded=True, include_metadata=True
    )
    assert by_subject.partitions() == [f"{stream}.a", f"{stream}.b"]
    part_b = by_subject.open(f"{stream}.b", 20)  # sequences 22, 24, ..., 40 remain for b
    rows = drain(part_b)
    part_b.close()
    assert [r["_seq"] for r in rows] == list(range(22, 41, 2))
    assert all(r["_subject"] == f"{stream}.b" for r in rows)


def test_unbounded_source_waits_for_new_messages(nats_server) -> None:
    url, stream = nats_server.url, stream_name()
    nats_conn.ensure_stream(url, stream, [f"{stream}.in"])
    part = nats_conn.NatsSource(url, stream, poll_timeout=0.05).open(stream, None)
    try:
        assert part.next_batch() == []  # nothing yet, and not the end
        publish(url, [(f"{stream}.in", b'{"n": 1}'), (f"{stream}.in", b'{"n": 2}')])
        got: list[dict] = []
        deadline = time.monotonic() + 10
        while len(got) < 2 and time.monotonic() < deadline:
            got += part.next_batch()
        assert got == [{"n": 1}, {"n": 2}] and part.snapshot() == 2
    finally:
        part.close()


def test_bounded_source_on_an_empty_filter_ends(nats_server) -> None:
    url, stream = nats_server.url, stream_name()
    nats_conn.ensure_stream(url, stream, [f"{stream}.*"])
    publish(url, [(f"{stream}.x", b"{}")])
    source = nats_conn.NatsSource(url, stream, subjects=[f"{stream}.y"], bounded=True)
    part = source.open(f"{stream}.y", None)
    assert drain(part, limit=5) == []
    part.close()


def test_malformed_message_is_named_or_skipped(nats_server) -> None:
    url, stream = nats_server.url, stream_name()
    nats_conn.ensure_stream(url, stream, [f"{stream}.in"])
    publish(url, [(f"{stream}.in", b'{"n": 1}'), (f"{stream}.in", b"oops"), (f"{stream}.in", b"3")])
    failing = nats_conn.NatsSource(url, stream, bounded=True).open(stream, None)
    with pytest.raises(MalformedRecordError, match=rf"stream '{stream}' at sequence 2"):
        drain(failing)
    failing.close()
    skipping = nats_conn.NatsSource(url, stream, bounded=True, on_error="skip").open(stream, None)
    assert drain(skipping) == [{"n": 1}, {"value": 3}]
    assert skipping.skipped == 1
    skipping.close()


def test_missing_stream_is_a_clear_error(nats_server) -> None:
    with pytest.raises(ConnectorError, match=r"stream 'NOPE' does not exist"):
        nats_conn.NatsSource(nats_server.url, "NOPE").open("NOPE", None)


def test_sink_commit_is_idempotent_through_msg_id_dedup(nats_server) -> None:
    url, stream = nats_server.url, stream_name()
    nats_conn.ensure_stream(url, stream, [f"{stream}.>"], duplicate_window=300)
    sink = nats_conn.NatsSink(url, f"{stream}.{{key}}", stream=stream)
    writer = sink.writer("out", 0, 1)
    writer.write([{"key": f"k{i % 3}", "n": i} for i in range(30)])
    txn = writer.pre_commit(1)
    assert writer.pre_commit(2) is None  # nothing new since
    sink.commit(txn)
    sink.commit(txn)  # the runtime re-commits after a restore
    other = nats_conn.NatsSink(url, f"{stream}.{{key}}", stream=stream)  # a new process
    other.commit(json.loads(json.dumps(txn)))  # as read back from checkpoint metadata
    sink.close()
    other.close()
    assert [r["n"] for r in read_stream(url, stream)] == list(range(30))


def test_sink_stages_large_transactions_in_an_object_store(nats_server, tmp_path) -> None:
    url, stream = nats_server.url, stream_name()
    nats_conn.ensure_stream(url, stream, [f"{stream}.out"])
    staging = str(tmp_path / "staging")
    sink = nats_conn.NatsSink(url, f"{stream}.out", inline_limit=50, staging_url=staging)
    writer = sink.writer("out", 3, 4)
    for start in (0, 40, 80):  # rolls a part at 80 buffered, the rest at pre-commit
        writer.write([{"n": i} for i in range(start, start + 40)])
    txn = writer.pre_commit(5)
    assert "records" not in txn and len(txn["parts"]) == 2 and txn["count"] == 120
    store = open_object_store(staging)
    assert all(store.stat(key) for key in txn["parts"])

    sink.commit(txn)
    assert all(key.endswith(".arrow") for key in txn["parts"])  # strings: Arrow columns
    assert not [k for k in store.list("_staging/") if k.endswith((".arrow", ".jsonl"))]
    sink.commit(txn)  # parts gone, but recorded as published: a no-op
    assert [r["n"] for r in read_stream(url, stream)] == list(range(120))

    lost = dict(txn, checkpoint=9, parts=["_staging/out/0003-gone.jsonl"])
    with pytest.raises(ConnectorError, match=r"staged data .* is gone"):
        sink.commit(lost)
    sink.close()

    inline_only = nats_conn.NatsSink(url, f"{stream}.out", inline_limit=10)
    with pytest.raises(TransactionTooLargeError, match=r"give the sink a staging_url"):
        inline_only.writer("out", 0, 1).write([{"n": i} for i in range(11)])


def test_sink_and_source_release_their_threads(nats_server) -> None:
    url, stream = nats_server.url, stream_name()
    nats_conn.ensure_stream(url, stream, [f"{stream}.x"])
    before = {t.name for t in threading.enumerate()}
    sink = nats_conn.NatsSink(url, f"{stream}.x")
    writer = sink.writer("o", 0, 1)
    writer.write([{"a": 1}])
    sink.commit(writer.pre_commit(1))
    part = nats_conn.NatsSource(url, stream, bounded=True).open(stream, None)
    drain(part)
    part.close()
    sink.close()
    leaked = {t.name for t in threading.enumerate()} - before
    assert not [n for n in leaked if n.startswith("cjob-asyncio")], leaked


def test_source_survives_a_server_restart() -> None:
    with EmbeddedNatsServer() as server:
        url, stream = server.url, stream_name()
        nats_conn.ensure_stream(url, stream, [f"{stream}.in"])
        publish(url, [(f"{stream}.in", b'{"n": 1}')])
        part = nats_conn.NatsSource(url, stream, poll_timeout=0.05).open(stream, None)
        try:
            assert part.next_batch() == [{"n": 1}]
            server.restart()
            publish(url, [(f"{stream}.in", b'{"n": 2}')])
            got = waiting.wait_until(
                lambda: list(part.next_batch()),
                30,
                "the record published after the restart",
                interval=0,  # back to back, as a task polls (polled every 0.1 s it never recovers)
                ignoring=(ConnectorError,),  # reconnecting
            )
            assert got == [{"n": 2}] and part.snapshot() == 2
        finally:
            part.close()
        pid = server.pid
    assert pid is not None and not alive(pid)


KEYS, PER_KEY, SUBJECTS = 60, 300, 3


def count_flow(url: str, in_stream: str, out_subject: str, out_stream: str) -> Dataflow:
    flow = Dataflow("nats-count")
    source = nats_conn.NatsSource(
        url,
        in_stream,
        subjects=[f"{in_stream}.p{p}" for p in range(SUBJECTS)],
        bounded=True,
        batch_size=200,
    )
    keyed = flow.source("events", source).key_by("by-key", "key")
    counted = keyed.stateful_map("count", count_event).map_batches("slow", _slow)
    counted.sink("out", nats_conn.NatsSink(url, out_subject, stream=out_stream))
    return flow


def _slow(batch: pa.RecordBatch) -> pa.RecordBatch:
    time.sleep(0.003)  # keeps the job running across several checkpoints
    return batch


def test_nats_to_nats_running_count_is_exactly_once_through_crashes(nats_server, tmp_path) -> None:
    url = nats_server.url
    in_stream, out_stream = stream_name(), stream_name()
    nats_conn.ensure_stream(url, in_stream, [f"{in_stream}.>"])
    nats_conn.ensure_stream(url, out_stream, [f"{out_stream}.>"], duplicate_window=600)
    events = [
        (f"{in_stream}.p{k % SUBJECTS}", json.dumps({"key": f"k{k}", "seq": s}).encode())
        for s in range(PER_KEY)
        for k in range(KEYS)
    ]
    publish(url, events)
    expected = [
        {"key": f"k{k}", "seq": s, "count": s + 1} for k in range(KEYS) for s in range(PER_KEY)
    ]

    P = FaultPoint
    injector = FaultInjector(
        [  # gated by attempt so that each lands in an attempt of its own
            Crash(P.SNAPSHOT, task="count", checkpoint_id=3),
            Crash(P.PROCESSING, subtask=0, after_records=1_500, attempt=1),
            Crash(P.COMMIT, checkpoint_id=5, attempt=2),
            Crash(P.PROCESSING, subtask=1, after_records=1_000, attempt=3),
        ]
    )
    result = LocalExecutor(
        count_flow(url, in_stream, f"{out_stream}.counts", out_stream),
        parallelism=2,
        store=CheckpointStore(open_object_store(str(tmp_path / "cp")), "default/nats"),
        config=CheckpointConfig(interval=0.05),
        fault_injector=injector,
    ).run()

    output = read_stream(url, out_stream)
    report = check_exactly_once(expected, output)
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0), report
    assert len(injector.fired) >= 3, injector.fired
    assert 3 <= result.restarts <= len(injector.fired), result.failures
