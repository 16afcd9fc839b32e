"""The Bytewax peer's dataflow (W2, W3), written the way Bytewax's docs write them.

Loaded by ``python -m bytewax.run cjob_bench.peers.bytewax_flow:flow``;
configured by environment variables (``SUITE_BW_WORKLOAD``, ``…_INPUT``,
``…_OUTPUT``, ``…_KEYS``, ``…_BATCH``) because the import string takes no
arguments.

* W2: :class:`FilesSource` (Parquet, one partition per file, rows as dicts) →
  ``key_on(str(key))`` → ``stateful_map`` running count → :class:`LastValueSink`;
* W3: :class:`FilesSource` (JSON lines) → ``map(json.loads)`` →
  ``filter(kind == "buy")`` → ``key_on`` → ``stateful_map`` count → :class:`LastValueSink`.

The source is resumable (its snapshot is the row or line offset), so with
Bytewax recovery on (``-r DIR -s 1``) the state and the input positions are
snapshotted together every second.
"""

from __future__ import annotations

import json
import os
import pathlib
from collections.abc import Iterator
from typing import Any

import bytewax.operators as op
import pyarrow.parquet as pq
from bytewax.dataflow import Dataflow
from bytewax.inputs import FixedPartitionedSource, StatefulSourcePartition
from bytewax.outputs import DynamicSink, StatelessSinkPartition


class FilesSource(FixedPartitionedSource[Any, int]):
    """Every file matching ``pattern`` in ``directory`` is a partition; positions are offsets."""

    def __init__(self, directory: str, pattern: str, batch_size: int) -> None:
        self.directory = pathlib.Path(directory)
        self.pattern = pattern
        self.batch_size = batch_size

    def list_parts(self) -> list[str]:
        return sorted(p.name for p in self.directory.glob(self.pattern))

    def build_part(self, step_id: str, for_part: str, resume_state: int | None) -> _FilePartition:
        path = self.directory / for_part
        return _FilePartition(path, resume_state or 0, self.batch_size)


class _FilePartition(StatefulSourcePartition[Any, int]):
    def __init__(self, path: pathlib.Path, offset: int, batch_size: int) -> None:
        self.offset = offset
        self.batches = (
            self._parquet(path, batch_size)
            if path.suffix == ".parquet"
            else self._lines(path, batch_size)
        )

    def _parquet(self, path: pathlib.Path, batch_size: int) -> Iterator[list[Any]]:
        skip = self.offset
        for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_size):
            if skip >= batch.num_rows:
                skip -= batch.num_rows
                continue
            yield batch.slice(skip).to_pylist()
            skip = 0

    def _lines(self, path: pathlib.Path, batch_size: int) -> Iterator[list[Any]]:
        lines = path.read_text().splitlines()
        for start in range(self.offset, len(lines), batch_size):
            yield lines[start : start + batch_size]

    def next_batch(self) -> list[Any]:
        batch = next(self.batches)  # StopIteration: this partition is done
        self.offset += len(batch)
        return batch

    def snapshot(self) -> int:
        return self.offset


class LastValueSink(DynamicSink[tuple[str, int]]):
    """Each key's latest running total, written as JSON when the worker ends."""

    def __init__(self, directory: str, keys: int) -> None:
        self.directory = pathlib.Path(directory)
        self.keys = keys

    def build(self, step_id: str, worker_index: int, worker_count: int) -> _LastValuePartition:
        return _LastValuePartition(self.directory / f"bytewax-{worker_index}.json", self.keys)


class _LastValuePartition(StatelessSinkPartition[tuple[str, int]]):
    def __init__(self, path: pathlib.Path, keys: int) -> None:
        self.path = path
        self.latest: dict[str, int] = {}

    def write_batch(self, items: list[tuple[str, int]]) -> None:
        # A key's items arrive in order, so its last count is its largest.
        self.latest.update(items)

    def close(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = {"keys": [int(k) for k in self.latest], "values": list(self.latest.values())}
        self.path.write_text(json.dumps(body))


def _count(state: int | None, _item: Any) -> tuple[int, int]:
    n = (state or 0) + 1
    return n, n


def build(workload: str, source: str, output: str, keys: int, batch_size: int) -> Dataflow:
    flow = Dataflow(f"suite-{workload.lower()}")
    if workload == "W2":
        rows = op.input("inp", flow, FilesSource(source, "*.parquet", batch_size))
    else:
        lines = op.input("inp", flow, FilesSource(source, "*.jsonl", batch_size))
        parsed = op.map("parse", lines, json.loads)
        rows = op.filter("buys", parsed, lambda r: r["kind"] == "buy")
    keyed = op.key_on("key", rows, lambda r: str(r["key"]))
    counts = op.stateful_map("count", keyed, _count)
    op.output("out", counts, LastValueSink(output, keys))
    return flow


def _from_env() -> Dataflow:
    env = os.environ
    if "SUITE_BW_WORKLOAD" not in env:  # imported, not run: an empty placeholder flow
        return Dataflow("suite-unconfigured")
    return build(
        env["SUITE_BW_WORKLOAD"],
        env["SUITE_BW_INPUT"],
        env["SUITE_BW_OUTPUT"],
        int(env["SUITE_BW_KEYS"]),
        int(env.get("SUITE_BW_BATCH", "8192")),
    )


flow = _from_env()
