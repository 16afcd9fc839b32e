"""Exactly-once on real Spark (local mode, 3 worker processes) from a real NATS JetStream
server to the exactly-once file sink on a real S3 server.

A deterministic stream (200 keys, 200 events each, with per-key sequence numbers, on six
subjects so that each of the three workers reads two) is published once to a real
``nats-server -js``; the keyed running count reads it with the bounded
:class:`~barrier_runtime.connectors.nats.NatsSource` (positions are stream sequences
kept in the checkpoints, on S3 like the output).

* crash-free: the reference output, which must also equal the analytic one;
* worker processes SIGKILLed five times at random moments;
* the driver process (``cjob run``) SIGKILLed once mid-run, then ``cjob run`` again
  with the same store, resuming from the latest completed checkpoint;
* NATS to NATS: the same count into the exactly-once ``NatsSink`` (deduplicated by
  ``Nats-Msg-Id``) with worker processes SIGKILLed three times.

Each must publish exactly the crash-free output: lost = duplicated = out-of-order = 0,
and no staged output is left behind.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
import time
import uuid

import pytest
from barrier_runtime_testing import spark_harness as h

from barrier_runtime.connectors import nats as nats_conn
from barrier_runtime.spark import driver
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import check_exactly_once

pytestmark = [pytest.mark.s3, pytest.mark.slow]

PIPELINE = str(pathlib.Path(__file__).with_name("nats_running_count_pipeline.py"))
KEYS, EVENTS_PER_KEY, PARTITIONS = 200, 200, 6
TOTAL = KEYS * EVENTS_PER_KEY


def _publish(url: str, messages: list[tuple[str, bytes]]) -> None:
    """Publish with nats-py directly (independent of the connector under test), in order."""
    import nats

    async def run() -> None:
        client = await nats.connect(url)
        js = client.jetstream()
        acks = [await js.publish_async(subject, data) for subject, data in messages]
        await asyncio.gather(*acks)
        await client.close()

    asyncio.run(run())


@pytest.fixture(scope="module")
def stream(nats_server) -> str:
    """A stream holding every event: key ``k`` on subject ``{stream}.p{k % PARTITIONS}``."""
    name = f"EVENTS{uuid.uuid4().hex[:8].upper()}"
    nats_conn.ensure_stream(nats_server.url, name, [f"{name}.>"])
    events = [
        (f"{name}.p{k % PARTITIONS}", json.dumps({"key": f"k{k}", "seq": s}).encode())
        for s in range(EVENTS_PER_KEY)
        for k in range(KEYS)
    ]
    started = time.monotonic()
    _publish(nats_server.url, events)
    print(f"published {len(events)} events to {name} in {time.monotonic() - started:.1f}s")
    return name


def _args(nats_server, stream, out_url, rate=None, sink_subject=None):
    args = [
        "--servers",
        nats_server.url,
        "--stream",
        stream,
        "--out",
        out_url,
        "--partitions",
        str(PARTITIONS),
    ]
    args += ["--rate", str(rate)] if rate else []
    return args + (["--sink-subject", sink_subject] if sink_subject else [])


def _spec(nats_server, stream, out_url, store_url, rate=None, sink_subject=None):
    args = _args(nats_server, stream, out_url, rate, sink_subject)
    return h.job_spec(PIPELINE, args, store_url, "default/nats-count")


def _read_stream(url: str, name: str) -> list[dict]:
    """Every message of a stream, in stream order, through a bounded NatsSource."""
    part = nats_conn.NatsSource(url, name, bounded=True, batch_size=1000).open(name, None)
    rows: list[dict] = []
    try:
        deadline = time.monotonic() + 60
        while (batch := part.next_batch()) is not None:
            rows.extend(batch)
            assert time.monotonic() < deadline, f"reading stream {name} never ended"
    finally:
        part.close()
    return rows


@pytest.fixture(scope="module")
def nats_crash_free(spark, s3_env, nats_server, stream):
    out_url, store_url = h.s3_urls(s3_env)
    started = time.monotonic()
    job = driver.SparkDriver(_spec(nats_server, stream, out_url, store_url), session=spark)
    result = job.run()
    print(f"crash-free run: {time.monotonic() - started:.1f}s, {result}")
    assert result.restarts == 0 and result.final_checkpoint is not None
    return h.published(out_url)


def test_crash_free_run_publishes_every_count_once(nats_crash_free) -> None:
    expected = [
        {"key": f"k{k}", "seq": s, "count": s + 1}
        for k in range(KEYS)
        for s in range(EVENTS_PER_KEY)
    ]
    report = check_exactly_once(expected, nats_crash_free)
    assert report.exactly_once and report.actual == TOTAL, report


def test_worker_processes_killed_five_times(
    spark, s3_env, nats_server, stream, nats_crash_free
) -> None:
    out_url, store_url = h.s3_urls(s3_env)
    spec = _spec(nats_server, stream, out_url, store_url, rate=1000)
    h.run_with_worker_kills(driver.SparkDriver(spec, session=spark), kills=5)
    h.assert_exactly_once(nats_crash_free, out_url)


def test_driver_killed_and_restarted(
    s3_env, nats_server, stream, nats_crash_free, tmp_path
) -> None:
    out_url, store_url = h.s3_urls(s3_env)
    command = [
        *h.CLI,
        "run",
        "--json",
        "-p",
        str(h.P),
        "--checkpoint-interval",
        "0.3",
        "--store",
        store_url,
        "--job",
        "default/nats-driver-restart",
        "--restart-backoff",
        "0.2",
        PIPELINE,
        "--",
        *_args(nats_server, stream, out_url, rate=800),
    ]
    h.kill_driver_and_run_again(command, tmp_path, out_url, total=TOTAL)
    h.assert_exactly_once(nats_crash_free, out_url)


def test_nats_to_nats_with_worker_kills(
    spark, s3_env, nats_server, stream, nats_crash_free
) -> None:
    out_stream = f"COUNTS{uuid.uuid4().hex[:8].upper()}"
    nats_conn.ensure_stream(nats_server.url, out_stream, [f"{out_stream}.>"], duplicate_window=600)
    staging_url, store_url = h.s3_urls(s3_env)
    spec = _spec(
        nats_server, stream, staging_url, store_url, rate=1000, sink_subject=f"{out_stream}.counts"
    )
    h.run_with_worker_kills(driver.SparkDriver(spec, session=spark), kills=3)
    report = check_exactly_once(nats_crash_free, _read_stream(nats_server.url, out_stream))
    print("exactly-once check:", report.as_dict())
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0), report
    assert not [k for k in open_object_store(staging_url).list("_staging/") if "jsonl" in k]
