"""The state-at-scale benchmark's pipeline file: many keys of ~100 bytes, then a share of them
updated every second (issue 32).

``KeyUpdates`` partition *p* first writes every key ``k`` with ``k % partitions == p`` once
(the load), as fast as the job takes it, then updates keys spread over the whole key
space at ``--rate / partitions`` per second for ``--seconds``. Every record is
``{"key": int, "value": bytes}``; a value is ``--value-bytes`` of noise drawn from a
generator seeded by the partition and the record's position (so it does not compress,
each update changes the state, and a replay writes the same bytes). The job keeps the latest
value per key (``stateful_map``) and emits nothing. The position is the index of the next
record, so a restore replays exactly; the update phase's pace starts again from the
restored position.

Only the runtime's public API is imported: the Spark workers load this file by path.

>>> source = KeyUpdates(keys=10, value_bytes=16, rate=1e9, seconds=0.0, partitions=2)
>>> part = source.open("updates-1", None)
>>> batch = part.next_batch()
>>> batch.column("key").to_pylist(), part.snapshot()
([1, 3, 5, 7, 9], 5)
>>> len(batch.column("value")[0].as_py())
16
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from barrier_runtime.api import Dataflow, Record, sources
from barrier_runtime.connectors.discard import DiscardSink

LOAD_BATCH = 20_000
UPDATE_BATCH = 2_000
_SPREAD = 2_654_435_761
"""Odd multiplier that spreads the update phase's keys over the key space."""


class KeyUpdates(sources.Source):
    """Every key once, then ``rate`` updates per second for ``seconds`` (see the module)."""

    def __init__(
        self,
        *,
        keys: int,
        value_bytes: int,
        rate: float,
        seconds: float,
        partitions: int,
        distinct: int = 0,
        load_batch: int = LOAD_BATCH,
    ) -> None:
        """``distinct``: when positive, every key is taken modulo it (the same records over
        fewer keys: a control for what memory the records take beside the state)."""
        self.keys, self.value_bytes = keys, value_bytes
        self.rate, self.seconds, self.num_partitions = rate, seconds, partitions
        self.distinct, self.load_batch = distinct, load_batch

    def partitions(self) -> Sequence[str]:
        return [f"updates-{p}" for p in range(self.num_partitions)]

    def open(self, partition: str, resume_from: sources.Position | None) -> sources.SourcePartition:
        index = int(partition.rsplit("-", 1)[1])
        return _Partition(self, index, int(resume_from or 0))


class _Partition(sources.SourcePartition):
    def __init__(self, source: KeyUpdates, index: int, position: int) -> None:
        self._s, self._p, self._next = source, index, position
        parts = source.num_partitions
        self._owned = (source.keys - index + parts - 1) // parts
        per_second = source.rate / parts
        self._updates = int(per_second * source.seconds)
        self._per_second = per_second
        self._clock: tuple[float, int] | None = None
        """When the update phase started (in this attempt) and at which position."""

    def next_batch(self) -> pa.RecordBatch | list[Record] | None:
        start, owned = self._next, self._owned
        if start < owned:
            keys = np.arange(start, min(start + self._s.load_batch, owned), dtype=np.int64)
            keys = keys * self._s.num_partitions + self._p
        else:
            count = self._due(start - owned)
            if count is None:
                return None
            if not count:
                return []  # not due yet
            j = np.arange(start - owned, start - owned + count, dtype=np.int64)
            keys = (j * _SPREAD + self._p) % self._s.keys
        self._next = start + len(keys)
        values = self._values(keys, start)
        if self._s.distinct > 0:
            keys = keys % self._s.distinct
        return pa.record_batch({"key": keys, "value": values})

    def _due(self, done: int) -> int | None:
        """Updates to emit now (paced from this attempt's first update), ``None`` at the end."""
        if done >= self._updates:
            return None
        now = time.monotonic()
        if self._clock is None:
            self._clock = (now, done)
        began, first = self._clock
        allowed = first + int((now - began) * self._per_second)
        return max(0, min(allowed - done, UPDATE_BATCH, self._updates - done))

    def _values(self, keys: np.ndarray[Any, Any], start: int) -> pa.Array:
        """Incompressible values (like most real state), the same on every replay."""
        width, n = self._s.value_bytes, len(keys)
        noise = np.random.default_rng([self._p, start]).bytes(width * n)
        return pa.array([noise[i * width : (i + 1) * width] for i in range(n)], type=pa.binary())

    def snapshot(self) -> sources.Position:
        return self._next


def keep_latest(state: Any, record: Record) -> tuple[Any, tuple[()]]:
    return record["value"], ()


def build_flow(args: Sequence[str]) -> Dataflow:
    parser = argparse.ArgumentParser(prog="state-scale-pipeline")
    parser.add_argument("--keys", type=int, default=10_000_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--rate", type=float, default=100_000.0, help="updates per second")
    parser.add_argument("--seconds", type=float, default=60.0, help="of updates")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--distinct", type=int, default=0, help="keys modulo this (0: off)")
    parser.add_argument("--load-batch", type=int, default=LOAD_BATCH)
    ns = parser.parse_args(list(args))
    flow = Dataflow("state-scale", max_parallelism=128)
    source = KeyUpdates(
        keys=ns.keys,
        value_bytes=ns.value_bytes,
        rate=ns.rate,
        seconds=ns.seconds,
        partitions=ns.partitions,
        distinct=ns.distinct,
        load_batch=ns.load_batch,
    )
    flow.source("updates", source).key_by("by-key", "key").stateful_map("latest", keep_latest).sink(
        "out", DiscardSink()
    )
    return flow
