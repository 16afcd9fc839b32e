"""A 1-second tumbling count per key in event time, as a pipeline *file* for Spark tests.

Generated events (per-key sequence numbers) carry the event time ``seq * 100`` ms minus
up to 120 ms of disorder; watermarks are bounded by 200 ms, so no event is late and
every window result is deterministic. Arguments: ``--out URL --keys N
--events-per-key M --partitions P --batch-size B [--rate EVENTS_PER_S_PER_PARTITION]
[--vectorised]``: with ``--vectorised`` the count is ``window_agg`` over a ``ts`` column
added to each batch, instead of ``window`` with ``count()``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from barrier_runtime.api import Dataflow
from barrier_runtime.api.watermarks import BoundedOutOfOrderness
from barrier_runtime.api.windows import Tumbling, count
from barrier_runtime.connectors.files import FileSink
from barrier_runtime.connectors.generator import GeneratorSource


def event_time(record: dict[str, Any]) -> int:
    seq = int(record["seq"])
    return seq * 100 - (seq * 37 % 7) * 20


def build_flow(args: Sequence[str]) -> Dataflow:
    parser = argparse.ArgumentParser(prog="windowed_count_pipeline")
    parser.add_argument("--out", required=True)
    parser.add_argument("--keys", type=int, required=True)
    parser.add_argument("--events-per-key", type=int, required=True)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--rate", type=float, default=None)
    parser.add_argument("--vectorised", action="store_true")
    ns = parser.parse_args(list(args))
    flow = Dataflow("windowed-count")
    source = GeneratorSource(
        keys=ns.keys,
        events_per_key=ns.events_per_key,
        partitions=ns.partitions,
        batch_size=ns.batch_size,
        rate_per_partition=ns.rate,
    )
    events = flow.source(
        "events", source, timestamps=event_time, watermarks=BoundedOutOfOrderness(200)
    )
    if ns.vectorised:
        stamped = events.map_batches("stamp", with_ts)
        counts = stamped.key_by("by-key", "key").window_agg(
            "counts", Tumbling(1_000), timestamps="ts", how="count", output="n"
        )
    else:
        counts = events.key_by("by-key", "key").window(
            "counts", Tumbling(1_000), timestamps=event_time, aggregate=count(), output="n"
        )
    counts.sink("out", FileSink(ns.out))
    return flow


def with_ts(batch: pa.RecordBatch) -> pa.RecordBatch:
    seq = batch.column("seq").to_numpy()
    return batch.append_column("ts", pa.array(seq * 100 - (seq * 37 % 7) * 20))
