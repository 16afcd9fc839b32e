"""The start-up benchmark's pipeline file: a rate-limited keyed sum whose sink stamps its first record.

``build_flow(["--stamps", DIR])``: the Spark driver and every worker load
this file by path with the same arguments.

    events (columnar generator, endless, --rate events/s per partition)
      -> key_by("key")      crosses workers: the peers' rendezvous is on the path
      -> sum("sum", "value")
      -> out                discarded; each writer stamps its first record

Every writer (one per worker and attempt) writes ``DIR/<uuid>.json`` with the
wall-clock time of its first record and its process id, at once (a killed
worker never reaches ``close()``). The benchmark matches stamps to attempts
by time and kills a worker by the pid in a stamp.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import time
import uuid
from collections.abc import Sequence

import pyarrow as pa

from barrier_runtime.api import Dataflow, Record
from barrier_runtime.connectors.columnar_generator import ColumnarGeneratorSource
from barrier_runtime.connectors.discard import DiscardSink, DiscardWriter


def build_flow(args: Sequence[str]) -> Dataflow:
    parser = argparse.ArgumentParser(prog="startup_pipeline")
    parser.add_argument("--stamps", required=True, help="directory for the first-record stamps")
    parser.add_argument("--rate", type=float, default=20_000.0, help="events/s per partition")
    parser.add_argument("--partitions", type=int, default=2)
    ns = parser.parse_args(list(args))
    source = ColumnarGeneratorSource(
        events=None,
        keys=1000,
        partitions=ns.partitions,
        batch_size=1000,
        rate_per_partition=ns.rate,
    )
    flow = Dataflow("startup-bench")
    flow.source("events", source).key_by("by-key", "key").sum("sum", "value").sink(
        "out", FirstRecordSink(ns.stamps)
    )
    return flow


class FirstRecordSink(DiscardSink):
    """Discards records; each writer stamps the moment its first record arrived."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def writer(self, step_id: str, subtask: int, parallelism: int) -> DiscardWriter:
        return _FirstRecordWriter(pathlib.Path(self.directory), subtask)


class _FirstRecordWriter(DiscardWriter):
    def __init__(self, directory: pathlib.Path, subtask: int) -> None:
        super().__init__()
        self._path = directory / f"{uuid.uuid4().hex}.json"
        self._subtask = subtask
        self._stamped = False

    def write(self, records: Sequence[Record]) -> None:
        super().write(records)
        self._stamp()

    def write_batch(self, batch: pa.RecordBatch) -> None:
        super().write_batch(batch)
        self._stamp()

    def _stamp(self) -> None:
        if self._stamped or self.records == 0:
            return
        self._stamped = True
        stamp = {"first": time.time(), "pid": os.getpid(), "subtask": self._subtask}
        tmp = self._path.with_suffix(".tmp")
        tmp.write_text(json.dumps(stamp))
        tmp.replace(self._path)
