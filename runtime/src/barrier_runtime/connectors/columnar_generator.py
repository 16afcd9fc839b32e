"""A deterministic, columnar generator source: Arrow batches of int64 keys and values.

The fast-path counterpart of :class:`~barrier_runtime.connectors.generator.GeneratorSource`,
for benchmarks and tests of vectorised steps. Every event is a pure function
of ``(seed, partition, index)`` — a counter-based hash, no random state — so
a partition reopened at any position yields exactly the events it yielded
the first time. The position is the index of the next event of the partition.

Two key orders:

* ``"uniform"``: ``key`` uniform over ``[0, keys)``, ``value`` uniform over
  ``[0, value_range)`` (benchmark workloads);
* ``"cyclic"``: partition *p* owns the keys ``k`` with ``k % partitions == p``
  and cycles through them, adding ``seq`` = 0, 1, 2, … per key, which is what
  an exactly-once checker needs.

``events`` is the total over all partitions (``None``: unbounded); batches
hold up to ``batch_size`` events; ``rate_per_partition`` (events/s) throttles.
``stamp_created=True`` adds the int64 column
:data:`~barrier_runtime.api.sources.CREATED_COLUMN` (ns since the epoch: when
the rate made the event due, or when it was generated) for latency metrics;
that column is not reproduced on replay.

>>> src = ColumnarGeneratorSource(events=10, keys=4, partitions=2, batch_size=3, key_order="cyclic")
>>> batch = src.open("cols-1", None).next_batch()
>>> batch.to_pydict()["key"], batch.to_pydict()["seq"]
([1, 3, 1], [0, 0, 1])
>>> src.open("cols-1", 2).next_batch().to_pydict()["key"]
[1, 3, 1]
>>> first = ColumnarGeneratorSource(events=100, keys=10).open("cols-0", 40).next_batch()
>>> first.equals(ColumnarGeneratorSource(events=100, keys=10).open("cols-0", 40).next_batch())
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from barrier_runtime.api import sources
from barrier_runtime.connectors import _pacing

KeyOrder = Literal["uniform", "cyclic"]

_PARTITION_STRIDE = 0xD1B54A32D192ED03
_SEED_STRIDE = 0x8CB92BA72F3D8DD7


class ColumnarGeneratorSource(sources.Source):
    def __init__(
        self,
        *,
        events: int | None,
        keys: int,
        partitions: int = 2,
        batch_size: int = 65_536,
        seed: int = 0,
        key_order: KeyOrder = "uniform",
        value_range: int = 1000,
        rate_per_partition: float | None = None,
        stamp_created: bool = False,
    ) -> None:
        if keys < 1 or partitions < 1 or batch_size < 1 or value_range < 1:
            raise ValueError("keys, partitions, batch_size and value_range must be positive")
        if events is not None and events < 0:
            raise ValueError("events must not be negative")
        if key_order not in ("uniform", "cyclic"):
            raise ValueError(f"key_order must be 'uniform' or 'cyclic', got {key_order!r}")
        if key_order == "cyclic" and keys < partitions:
            raise ValueError("cyclic key order needs at least one key per partition")
        self.events = events
        self.keys = keys
        self.num_partitions = partitions
        self.batch_size = batch_size
        self.seed = seed
        self.key_order: KeyOrder = key_order
        self.value_range = value_range
        self.rate = rate_per_partition
        self.stamp_created = stamp_created

    def partitions(self) -> Sequence[str]:
        return [f"cols-{p}" for p in range(self.num_partitions)]

    def partition_events(self, index: int) -> int | None:
        """How many events partition ``index`` holds (``None``: unbounded)."""
        if self.events is None:
            return None
        share, extra = divmod(self.events, self.num_partitions)
        return share + (1 if index < extra else 0)

    def open(self, partition: str, resume_from: sources.Position | None) -> sources.SourcePartition:
        index = int(partition.rsplit("-", 1)[1])
        if not 0 <= index < self.num_partitions:
            raise ValueError(f"no partition {partition!r} in a source of {self.num_partitions}")
        return _ColumnarPartition(self, index, int(resume_from or 0))

    def events_between(self, partition: int, start: int, stop: int) -> pa.RecordBatch:
        """Events ``[start, stop)`` of ``partition`` (what a reader of it returns)."""
        index = np.arange(start, stop, dtype=np.int64)
        base = (self.seed * _SEED_STRIDE + partition * _PARTITION_STRIDE) & ((1 << 64) - 1)
        mixed = _mix(index.astype(np.uint64) + np.uint64(base))
        value = (mixed >> np.uint64(32)) % np.uint64(self.value_range)
        columns: dict[str, npt.NDArray[np.int64]] = {}
        if self.key_order == "uniform":
            columns["key"] = (mixed % np.uint64(self.keys)).astype(np.int64)
        else:
            owned = (self.keys - partition + self.num_partitions - 1) // self.num_partitions
            columns["key"] = partition + self.num_partitions * (index % owned)
            columns["seq"] = index // owned
        columns["value"] = value.astype(np.int64)
        return pa.record_batch({name: pa.array(col) for name, col in columns.items()})


def _mix(z: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """SplitMix64's finalizer (wrapping unsigned arithmetic)."""
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z


class _ColumnarPartition(sources.SourcePartition):
    def __init__(self, source: ColumnarGeneratorSource, index: int, position: int) -> None:
        self._src = source
        self._index = index
        self._next = position
        self._budget = _pacing.EmissionBudget(
            batch_size=source.batch_size,
            end=source.partition_events(index),
            rate=source.rate,
            position=position,
        )

    def next_batch(self) -> pa.RecordBatch | None:
        count = self._budget.next_count(self._next)
        if count is None:
            return None
        batch = self._src.events_between(self._index, self._next, self._next + count)
        if self._src.stamp_created:
            created = pa.array(self._budget.created_ns(self._next, count))
            batch = batch.append_column(sources.CREATED_COLUMN, created)
        self._next += count
        return batch

    def snapshot(self) -> sources.Position:
        return self._next
