"""Workload W4 as a pipeline file: a rate-limited per-record keyed running count, timed at the sink.

``build_flow(["--events", "1000000", "--rate", "40000", "--stamps", DIR, ...])``: the
Spark driver and every worker load this file by path with the same arguments.

    events (generator: keys k0..kN cycled per partition, --rate events/s in total,
            each record stamped with event_created = when the rate made it due)
      -> key_by("key")                 per-record routing by key group
      -> stateful_map("count", ...)    a Python function per record, keyed state
      -> out                           discarded after its latency was taken

Without ``--rate`` the source runs flat out (the maximum-throughput run).
The sink keeps, per writer, a histogram of ``write time - event_created`` in
0.1 ms bins (exact enough for p99.9) and writes it with the writer's first and
last write time and record count to one JSON file in ``--stamps``, at every
checkpoint and at the end; records written in the first ``--warmup`` seconds
after the writer's first write are counted but not measured.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa

from barrier_runtime.api import Dataflow, Record
from barrier_runtime.api.sinks import Transaction
from barrier_runtime.api.sources import CREATED_COLUMN
from barrier_runtime.connectors.discard import DiscardSink, DiscardWriter
from barrier_runtime.connectors.generator import GeneratorSource

BIN_NS = 100_000
"""Histogram resolution of the bench sink: 0.1 ms."""
MAX_BINS = 600_000
"""60 s; slower records land in the last bin."""


def build_flow(args: Sequence[str]) -> Dataflow:
    parser = argparse.ArgumentParser(prog="w4_pipeline")
    parser.add_argument("--events", type=int, required=True)
    parser.add_argument("--rate", type=float, default=None, help="events/s over all partitions")
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--stamps", required=True, help="directory for the sink's histograms")
    parser.add_argument("--switch-interval", type=float, default=None, help="sys.setswitchinterval")
    ns = parser.parse_args(list(args))
    if ns.switch_interval is not None:
        sys.setswitchinterval(ns.switch_interval)
    source = GeneratorSource(
        keys=ns.keys,
        events_per_key=max(1, ns.events // ns.keys),
        partitions=ns.partitions,
        batch_size=ns.batch_size,
        rate_per_partition=None if ns.rate is None else ns.rate / ns.partitions,
        stamp_created=True,
    )
    flow = Dataflow("w4-latency")
    keyed = flow.source("events", source).key_by("by-key", "key")
    keyed.stateful_map("count", count_event).sink("out", LatencySink(ns.stamps, ns.warmup))
    return flow


def count_event(state: int | None, record: Record) -> tuple[int, Iterable[Record]]:
    """The running count per key; the output carries the event's creation stamp."""
    n = (state or 0) + 1
    return n, ({"key": record["key"], "count": n, CREATED_COLUMN: record[CREATED_COLUMN]},)


class LatencySink(DiscardSink):
    """Discards records after putting ``now - event_created`` into a fine histogram."""

    def __init__(self, directory: str, warmup: float) -> None:
        self.directory = directory
        self.warmup = warmup

    def writer(self, step_id: str, subtask: int, parallelism: int) -> DiscardWriter:
        return _LatencyWriter(pathlib.Path(self.directory), subtask, self.warmup)


class _LatencyWriter(DiscardWriter):
    def __init__(self, directory: pathlib.Path, subtask: int, warmup: float) -> None:
        super().__init__()
        self._path = directory / f"{os.getpid()}-{subtask}.json"
        self._subtask = subtask
        self._warmup = warmup
        self._first: float | None = None
        self._last: float | None = None
        self._bins = np.zeros(MAX_BINS, dtype=np.int64)
        self._writes = 0

    def write(self, records: Sequence[Record]) -> None:
        super().write(records)
        self._measure(np.fromiter((r[CREATED_COLUMN] for r in records), np.int64, len(records)))

    def write_batch(self, batch: pa.RecordBatch) -> None:
        super().write_batch(batch)
        self._measure(batch.column(CREATED_COLUMN).to_numpy().astype(np.int64))

    def _measure(self, created: np.ndarray) -> None:
        now = time.time_ns()
        self._writes += 1
        self._last = now / 1e9
        if self._first is None:
            self._first = self._last
        if self._last - self._first < self._warmup or not len(created):
            return
        counts = np.bincount(np.clip((now - created) // BIN_NS, 0, MAX_BINS - 1))
        # Only as many bins as this write reaches: a full-length bincount per write cost
        # 0.2 ms (4.8 MB to zero and add), a fifth of this machine at 2,000 writes/s.
        self._bins[: len(counts)] += counts

    def pre_commit(self, checkpoint_id: int) -> Transaction | None:
        self._save()
        return None

    def close(self) -> None:
        self._save()

    def _save(self) -> None:
        nonzero = np.flatnonzero(self._bins)
        stamp = {
            "pid": os.getpid(),
            "subtask": self._subtask,
            "first": self._first,
            "last": self._last,
            "records": self.records,
            "writes": self._writes,
            "bin_ns": BIN_NS,
            "bins": dict(zip(nonzero.tolist(), self._bins[nonzero].tolist(), strict=True)),
        }
        tmp = self._path.with_suffix(".tmp")
        tmp.write_text(json.dumps(stamp))
        tmp.replace(self._path)
