"""The demo pipeline: a keyed running count over a deterministic generator.

Every output record is ``{"key", "seq", "count"}``; in a correct run each
key's output has ``seq`` 0, 1, 2, … in order and ``count == seq + 1``, which
makes lost, duplicated and re-ordered results easy to count
(:func:`expected_output`).

>>> from barrier_runtime.testing import TestingSink
>>> flow = running_count_flow(TestingSink(), keys=3, events_per_key=2)
>>> flow.step_ids
('events', 'by-key', 'count', 'out')

The module is also a pipeline (``build_flow(args)``) that ``cjob run`` and
Spark workers load by name; ``cjob demo`` runs it:

>>> build_flow(["--out", "/tmp/demo-out", "--keys", "3"]).name
'running-count'
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

import pyarrow as pa

from barrier_runtime.api import Dataflow, Record, Sink
from barrier_runtime.connectors.files import FileSink
from barrier_runtime.connectors.generator import GeneratorSource


def count_event(state: int | None, record: Record) -> tuple[int, Iterable[Record]]:
    """Count events per key; emit the running count with the event's sequence number."""
    n = (state or 0) + 1
    return n, ({"key": record["key"], "seq": record["seq"], "count": n},)


def running_count_flow(
    sink: Sink,
    *,
    keys: int = 500,
    events_per_key: int | None = 400,
    partitions: int = 6,
    batch_size: int = 200,
    rate_per_partition: float | None = None,
    max_parallelism: int = 128,
    sink_delay_per_batch: float = 0.0,
) -> Dataflow:
    """The running count; ``sink_delay_per_batch`` makes the sink side deliberately slow."""
    flow = Dataflow("running-count", max_parallelism=max_parallelism)
    source = GeneratorSource(
        keys=keys,
        events_per_key=events_per_key,
        partitions=partitions,
        batch_size=batch_size,
        rate_per_partition=rate_per_partition,
    )
    keyed = flow.source("events", source).key_by("by-key", "key")
    counted = keyed.stateful_map("count", count_event)
    if sink_delay_per_batch > 0:
        counted = counted.map_batches("slow-down", _throttle(sink_delay_per_batch))
    counted.sink("out", sink)
    return flow


def _throttle(delay: float) -> Callable[[pa.RecordBatch], pa.RecordBatch]:
    def slow(batch: pa.RecordBatch) -> pa.RecordBatch:
        time.sleep(delay)
        return batch

    return slow


def expected_output(keys: int, events_per_key: int) -> Iterator[Record]:
    """The crash-free output of :func:`running_count_flow` over a bounded generator."""
    return (
        {"key": f"k{k}", "seq": s, "count": s + 1}
        for k in range(keys)
        for s in range(events_per_key)
    )


def build_flow(args: Sequence[str]) -> Dataflow:
    """The running count into an exactly-once :class:`FileSink` at ``--out`` (a path or URL)."""
    parser = argparse.ArgumentParser(prog="barrier_runtime.demo")
    parser.add_argument("--out", required=True, help="output directory or s3:// URL")
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument(
        "--events-per-key", type=int, default=300, help="0: endless (a job that never finishes)"
    )
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument(
        "--rate", type=float, help="events per second in total (default: unlimited)"
    )
    ns = parser.parse_args(list(args))
    return running_count_flow(
        FileSink(ns.out),
        keys=ns.keys,
        events_per_key=ns.events_per_key or None,
        partitions=ns.partitions,
        batch_size=ns.batch_size,
        rate_per_partition=None if ns.rate is None else ns.rate / ns.partitions,
    )
