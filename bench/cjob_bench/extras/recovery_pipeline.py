"""Workload W1 as a pipeline file: a keyed running sum over generated int64 events.

``build_flow(["--events", "10000000", "--stamps", DIR, ...])``: the Spark
driver and every worker load this file by path with the same arguments.

    events (columnar generator: key uniform over --keys, value in [0, 1000))
      -> key_by("key")             vectorised routing by key group
      -> sum("sum", "value")       vectorised running sum per key, per event
      -> out                       discarded (after being timed)

The sink writes one small JSON file per writer (one per worker process and
attempt) into ``--stamps``: the wall-clock time of its first and last batch
and how many records it received. The benchmark derives the processing window
and the moment processing resumed after a crash from these stamps.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import time
from collections.abc import Sequence

import pyarrow as pa

from barrier_runtime.api import Dataflow, Record
from barrier_runtime.connectors.columnar_generator import ColumnarGeneratorSource
from barrier_runtime.connectors.discard import DiscardSink, DiscardWriter


def build_flow(args: Sequence[str]) -> Dataflow:
    parser = argparse.ArgumentParser(prog="w1_pipeline")
    parser.add_argument("--events", type=int, required=True)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=65_536)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--stamps", default=None, help="directory for the sink's timing stamps")
    ns = parser.parse_args(list(args))
    source = ColumnarGeneratorSource(
        events=ns.events,
        keys=ns.keys,
        partitions=ns.partitions,
        batch_size=ns.batch_size,
        seed=ns.seed,
    )
    sink = StampingDiscardSink(ns.stamps) if ns.stamps else DiscardSink()
    flow = Dataflow("w1-keyed-sum")
    flow.source("events", source).key_by("by-key", "key").sum("sum", "value").sink("out", sink)
    return flow


class StampingDiscardSink(DiscardSink):
    """Discards records; each writer records when its first and last batch arrived."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def writer(self, step_id: str, subtask: int, parallelism: int) -> DiscardWriter:
        return _StampingWriter(pathlib.Path(self.directory), subtask)


class _StampingWriter(DiscardWriter):
    def __init__(self, directory: pathlib.Path, subtask: int) -> None:
        super().__init__()
        self._path = directory / f"{os.getpid()}-{subtask}.json"
        self._subtask = subtask
        self._first: float | None = None
        self._last: float | None = None

    def write(self, records: Sequence[Record]) -> None:
        super().write(records)
        self._stamp()

    def write_batch(self, batch: pa.RecordBatch) -> None:
        super().write_batch(batch)
        self._stamp()

    def _stamp(self) -> None:
        self._last = time.time()
        if self._first is None:
            self._first = self._last
            self._save()  # at once: a killed worker never reaches close()

    def close(self) -> None:
        self._save()

    def _save(self) -> None:
        stamp = {
            "pid": os.getpid(),
            "subtask": self._subtask,
            "first": self._first,
            "last": self._last,
            "records": self.records,
        }
        tmp = self._path.with_suffix(".tmp")
        tmp.write_text(json.dumps(stamp))
        tmp.replace(self._path)
