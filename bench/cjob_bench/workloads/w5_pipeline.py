"""W5's pipeline file: a 1-minute tumbling count per key over Parquet files, written as a user would.

``FileSource`` (Parquet, event time from ``ts``, watermarks 5 s behind the
newest event) → ``map_batches`` read probe → ``key_by("by-key", "key")`` →
``window_agg(Tumbling(60 s), how="count")`` → :class:`WindowSink`.

The read probe appends, per batch, the wall time and the batch's smallest
event time to ``--reads``; :class:`WindowSink` keeps every window result with
its arrival time and writes them as Parquet when the job ends. The benchmark
reads both to check the counts and measure latency. Only the runtime's public
API is imported: the Spark workers load this file by path.

>>> flow = build_flow(["--input", "/nowhere", "--output", "/nowhere", "--reads", "/nowhere"])
>>> flow.name
'w5-windows'
"""

from __future__ import annotations

import argparse
import os
import pathlib
import time
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from barrier_runtime.api import Dataflow, Record
from barrier_runtime.api import sinks as sinks_mod
from barrier_runtime.api.watermarks import BoundedOutOfOrderness
from barrier_runtime.api.windows import Tumbling
from barrier_runtime.connectors.file_source import FileSource

WINDOW_MS = 60_000


def build_flow(args: Sequence[str]) -> Dataflow:
    parser = argparse.ArgumentParser(prog="w5-pipeline")
    parser.add_argument("--input", required=True, help="directory of the Parquet files")
    parser.add_argument("--output", required=True, help="directory of the window results")
    parser.add_argument("--reads", required=True, help="directory of the read probe's logs")
    parser.add_argument("--batch-size", type=int, default=65_536)
    parser.add_argument("--bound-ms", type=int, default=5_000)
    ns = parser.parse_args(list(args))
    flow = Dataflow("w5-windows")
    events = flow.source(
        "events",
        FileSource(ns.input, pattern="*.parquet", batch_size=ns.batch_size),
        timestamps="ts",
        watermarks=BoundedOutOfOrderness(ns.bound_ms),
    )
    counts = (
        events.map_batches("read-probe", ReadProbe(ns.reads))
        .key_by("by-key", "key")
        .window_agg("per-minute", Tumbling(WINDOW_MS), timestamps="ts", how="count", output="count")
    )
    counts.sink("out", WindowSink(ns.output))
    return flow


class ReadProbe:
    """``map_batches`` function: logs ``wall-time smallest-ts`` per batch, returns it unchanged."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        line = f"{time.time()!r} {pc.min(batch.column('ts')).as_py()}\n"
        path = pathlib.Path(self.directory) / f"reads-{os.getpid()}.txt"
        with path.open("a") as out:
            out.write(line)
        return batch


class WindowSink(sinks_mod.Sink):
    """Keeps every window result and its arrival time; writes them when the job ends.

    Not transactional: the benchmark injects no failure and checks every
    window exactly once against the reference.
    """

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def writer(self, step_id: str, subtask: int, parallelism: int) -> sinks_mod.SinkWriter:
        return _WindowWriter(self.directory, subtask)

    def commit(self, transaction: sinks_mod.Transaction) -> None:
        """Nothing is staged."""


class _WindowWriter(sinks_mod.SinkWriter):
    def __init__(self, directory: str, subtask: int) -> None:
        self.directory = directory
        self.subtask = subtask
        self.tables: list[pa.Table] = []

    def write(self, records: Sequence[Record]) -> None:
        self.write_batch(pa.RecordBatch.from_pylist(list(records)))

    def write_batch(self, batch: pa.RecordBatch) -> None:
        arrived = pa.array([time.time()] * batch.num_rows, pa.float64())
        self.tables.append(
            pa.table(
                {
                    "key": batch.column("key"),
                    "window_start": batch.column("window_start"),
                    "count": batch.column("count"),
                    "arrived": arrived,
                }
            )
        )

    def pre_commit(self, checkpoint_id: int) -> sinks_mod.Transaction | None:
        return None

    def close(self) -> None:
        if not self.tables:
            return
        directory = pathlib.Path(self.directory)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{os.getpid()}-{self.subtask}.parquet"
        pq.write_table(pa.concat_tables(self.tables), path.with_suffix(".tmp"))
        path.with_suffix(".tmp").replace(path)
