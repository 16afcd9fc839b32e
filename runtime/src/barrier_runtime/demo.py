"""The demo pipeline: a keyed running count over a deterministic generator.

Every output record is ``{"key", "seq", "count"}``; in a correct run each
key's output has ``seq`` 0, 1, 2, … in order and ``count == seq + 1``, which
makes lost, duplicated and re-ordered results easy to count.

>>> from barrier_runtime.connectors.testing import TestingSink
>>> flow = running_count_flow(TestingSink(), keys=3, events_per_key=2)
>>> flow.step_ids
('events', 'by-key', 'count', 'out')
"""

from __future__ import annotations

from collections.abc import Iterable

from barrier_runtime.api import Dataflow, Record, Sink
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
) -> Dataflow:
    flow = Dataflow("running-count", max_parallelism=max_parallelism)
    source = GeneratorSource(
        keys=keys,
        events_per_key=events_per_key,
        partitions=partitions,
        batch_size=batch_size,
        rate_per_partition=rate_per_partition,
    )
    (
        flow.source("events", source)
        .key_by("by-key", "key")
        .stateful_map("count", count_event)
        .sink("out", sink)
    )
    return flow
