"""The suite's workloads as one pipeline file, written the way a user writes them.

``build_flow(["--workload", "W2", "--input", DIR, "--output", DIR])``: the
Spark driver and every worker load this file by path with the same
arguments, so it imports only the runtime's public API (no ``cjob_bench``).

* W1: ``FileSource`` (Parquet) → ``key_by("by-key", "key")`` →
  ``sum("sum", "value")`` (vectorised) → :class:`LastValueSink`;
* W2: ``FileSource`` (Parquet) → ``key_by(lambda r: r["key"])`` →
  ``stateful_map`` running count (a Python function per record) → :class:`LastValueSink`;
* W3: ``FileSource`` (JSON lines, fields ``key`` and ``kind`` declared) → ``filter(kind == "buy")`` →
  ``key_by(lambda r: r["key"])`` → ``stateful_map`` running count → ``FileSink``;
* W3v: W3 written with batch functions, the same records out: ``FileSource``
  (JSON lines) → ``map_batches`` (the ``buy`` events as ``{key, count: 1}``, one
  Arrow pass) → ``key_by("by-key", "key")`` → ``sum`` (running count) → ``FileSink``.

:class:`LastValueSink` keeps each key's latest output (every output of these
workloads is a running total, so the latest is the largest) and writes it,
with the wall-clock times of its first and last write, to one JSON file per
writer when the job ends. The suite checks those against the exact answers.

>>> flow = build_flow(["--workload", "W2", "--input", "/nowhere", "--output", "/nowhere"])
>>> flow.name
'suite-w2'
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import pathlib
import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from barrier_runtime.api import Dataflow, Record
from barrier_runtime.api import sinks as sinks_mod
from barrier_runtime.connectors.file_formats import ColumnType
from barrier_runtime.connectors.file_source import FileSource
from barrier_runtime.connectors.files import FileSink

W3_FIELDS: dict[str, ColumnType] = {"key": "int", "kind": "str"}
"""The fields W3 reads, declared as a user declares a reader schema: Spark's JSON reader,
given the events' schema, reads only the columns its query uses, and so does ours."""


def build_flow(args: Sequence[str]) -> Dataflow:
    parser = argparse.ArgumentParser(prog="suite-pipeline")
    parser.add_argument("--workload", choices=("W1", "W2", "W3", "W3v"), required=True)
    parser.add_argument("--input", required=True, help="directory of the input files")
    parser.add_argument("--output", required=True, help="directory of the results")
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--batch-size", type=int, default=65_536)
    parser.add_argument(
        "--timeline", action="store_true", help="the sink also keeps (time, records) per write"
    )
    ns = parser.parse_args(list(args))
    flow = Dataflow(f"suite-{ns.workload.lower()}")
    if ns.workload == "W1":
        events = flow.source(
            "events", FileSource(ns.input, pattern="*.parquet", batch_size=ns.batch_size)
        )
        sums = events.key_by("by-key", "key").sum("sum", "value")
        sums.sink("out", LastValueSink(ns.output, "sum", ns.keys, timeline=ns.timeline))
    elif ns.workload == "W2":
        events = flow.source(
            "events", FileSource(ns.input, pattern="*.parquet", batch_size=ns.batch_size)
        )
        counts = events.key_by("by-key", lambda r: r["key"]).stateful_map("count", running_count)
        counts.sink("out", LastValueSink(ns.output, "count", ns.keys, timeline=ns.timeline))
    elif ns.workload == "W3v":
        lines = flow.source(
            "events",
            FileSource(
                ns.input, pattern="*.jsonl", batch_size=ns.batch_size, json_fields=W3_FIELDS
            ),
        )
        buys = lines.map_batches("buys", buys_counted_once)
        counts = buys.key_by("by-key", "key").sum("count", "count", output="count")
        counts.sink("out", FileSink(ns.output))
    else:
        lines = flow.source(
            "events",
            FileSource(
                ns.input, pattern="*.jsonl", batch_size=ns.batch_size, json_fields=W3_FIELDS
            ),
        )
        buys = lines.filter("buys", lambda r: r["kind"] == "buy")
        counts = buys.key_by("by-key", lambda r: r["key"]).stateful_map("count", running_count)
        counts.sink("out", FileSink(ns.output))
    return flow


def buys_counted_once(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The ``buy`` events of ``batch`` as ``{key, count: 1}`` (W3v's filter, one Arrow pass)."""
    keys = batch.column("key").filter(pc.equal(batch.column("kind"), "buy"))
    return pa.record_batch({"key": keys, "count": pa.array(np.ones(len(keys), dtype=np.int64))})


def running_count(state: int | None, record: Record) -> tuple[int, Iterable[Record]]:
    n = (state or 0) + 1
    return n, ({"key": record["key"], "count": n},)


class LastValueSink(sinks_mod.Sink):
    """Keeps each key's largest ``column`` value; writes it when the job ends (not transactional).

    ``timeline``: also keeps the wall-clock time and size of every write, so that two
    jobs running at the same time can be compared over the window both were running.
    """

    def __init__(self, directory: str, column: str, keys: int, *, timeline: bool = False) -> None:
        self.directory = directory
        self.column = column
        self.keys = keys
        self.timeline = timeline

    def writer(self, step_id: str, subtask: int, parallelism: int) -> sinks_mod.SinkWriter:
        return _LastValueWriter(self, subtask)

    def commit(self, transaction: sinks_mod.Transaction) -> None:
        """Nothing is staged: the values are written once, at close."""


class _LastValueWriter(sinks_mod.SinkWriter):
    def __init__(self, sink: LastValueSink, subtask: int) -> None:
        self.sink = sink
        self.subtask = subtask
        self.latest = np.full(sink.keys, -1, dtype=np.int64)
        self.rows_latest: dict[int, int] = {}
        self.records = 0
        self.first: float | None = None
        self.last: float | None = None
        self.timeline: list[tuple[float, int]] | None = [] if sink.timeline else None

    def write(self, records: Sequence[Record]) -> None:
        # Within a subtask a key's records arrive in order: its last value is its largest.
        keys = map(operator.itemgetter("key"), records)
        values = map(operator.itemgetter(self.sink.column), records)
        self.rows_latest.update(zip(keys, values, strict=True))
        self._stamp(len(records))

    def write_batch(self, batch: pa.RecordBatch) -> None:
        keys = batch.column("key").to_numpy()
        np.maximum.at(self.latest, keys, batch.column(self.sink.column).to_numpy())
        self._stamp(batch.num_rows)

    def _stamp(self, n: int) -> None:
        self.records += n
        self.last = time.time()
        if self.first is None:
            self.first = self.last
        if self.timeline is not None:
            self.timeline.append((self.last, n))

    def pre_commit(self, checkpoint_id: int) -> sinks_mod.Transaction | None:
        return None

    def close(self) -> None:
        if self.rows_latest:
            keys = np.fromiter(self.rows_latest.keys(), np.int64, len(self.rows_latest))
            values = np.fromiter(self.rows_latest.values(), np.int64, len(self.rows_latest))
            np.maximum.at(self.latest, keys, values)
        seen = np.flatnonzero(self.latest >= 0)
        out: dict[str, Any] = {
            "subtask": self.subtask,
            "first": self.first,
            "last": self.last,
            "records": self.records,
            "keys": seen.tolist(),
            "values": self.latest[seen].tolist(),
        }
        if self.timeline is not None:
            out["timeline"] = self.timeline
        directory = pathlib.Path(self.sink.directory)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{os.getpid()}-{self.subtask}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(out))
        tmp.replace(path)
