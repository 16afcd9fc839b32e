"""A 1-second tumbling count per key in event time, as a pipeline *file* for Spark tests.

Generated events (per-key sequence numbers) carry the event time ``seq * 100`` ms minus
up to 120 ms of disorder; watermarks are bounded by 200 ms, so no event is late and
every window result is deterministic. Arguments: ``--out URL --keys N
--events-per-key M --partitions P --batch-size B [--rate EVENTS_PER_S_PER_PARTITION]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

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
    counts = events.key_by("by-key", "key").window(
        "counts", Tumbling(1_000), timestamps=event_time, aggregate=count(), output="n"
    )
    counts.sink("out", FileSink(ns.out))
    return flow
