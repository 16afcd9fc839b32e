"""A deterministic generator source with per-key sequence numbers.

Partition *p* owns the keys ``k`` with ``k % partitions == p`` and cycles
through them, so every key's events come from one partition in order and
carry ``seq`` = 0, 1, 2, … — exactly what an exactly-once checker needs. The
position is the index of the next event, so replay after a restore is exact.

>>> src = GeneratorSource(keys=4, events_per_key=2, partitions=2, batch_size=3)
>>> part = src.open("gen-0", None)
>>> [(r["key"], r["seq"]) for r in part.next_batch()]
[('k0', 0), ('k2', 0), ('k0', 1)]
>>> part.snapshot()
3
>>> [(r["key"], r["seq"]) for r in src.open("gen-0", 3).next_batch()]
[('k2', 1)]
"""

from __future__ import annotations

from collections.abc import Sequence

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import sources
from barrier_runtime.connectors import _pacing


class GeneratorSource(sources.Source):
    def __init__(
        self,
        *,
        keys: int,
        events_per_key: int | None,
        partitions: int = 4,
        batch_size: int = 256,
        rate_per_partition: float | None = None,
        stamp_created: bool = False,
    ) -> None:
        if keys < 1 or partitions < 1 or batch_size < 1:
            raise ValueError("keys, partitions and batch_size must be positive")
        if events_per_key is not None and events_per_key < 0:
            raise ValueError("events_per_key must not be negative")
        self.keys = keys
        self.events_per_key = events_per_key
        self.num_partitions = partitions
        self.batch_size = batch_size
        self.rate = rate_per_partition
        self.stamp_created = stamp_created
        """Add :data:`~barrier_runtime.api.sources.CREATED_COLUMN` to every record (latency
        metrics; not reproduced on replay)."""

    @property
    def total_events(self) -> int | None:
        return None if self.events_per_key is None else self.keys * self.events_per_key

    def partitions(self) -> Sequence[str]:
        return [f"gen-{p}" for p in range(self.num_partitions)]

    def open(self, partition: str, resume_from: sources.Position | None) -> sources.SourcePartition:
        index = int(partition.rsplit("-", 1)[1])
        owned = [k for k in range(self.keys) if k % self.num_partitions == index]
        return _GeneratorPartition(self, owned, int(resume_from or 0))


class _GeneratorPartition(sources.SourcePartition):
    def __init__(self, source: GeneratorSource, owned: list[int], position: int) -> None:
        self._owned = owned
        self._stamp = source.stamp_created
        self._next = position
        end = None if source.events_per_key is None else len(owned) * source.events_per_key
        self._budget = _pacing.EmissionBudget(
            batch_size=source.batch_size, end=end, rate=source.rate, position=position
        )

    def next_batch(self) -> Sequence[batch_mod.Record] | None:
        count = self._budget.next_count(self._next) if self._owned else None
        if not count:
            return count if count is None else []
        n = len(self._owned)
        rows = [
            {"key": f"k{self._owned[i % n]}", "seq": i // n}
            for i in range(self._next, self._next + count)
        ]
        if self._stamp:
            for row, created in zip(
                rows, self._budget.created_ns(self._next, count).tolist(), strict=True
            ):
                row[sources.CREATED_COLUMN] = created
        self._next += count
        return rows

    def snapshot(self) -> sources.Position:
        return self._next
