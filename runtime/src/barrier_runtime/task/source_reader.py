"""The reading side of a source subtask: its partitions, round-robin, and their positions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import sources, steps
from barrier_runtime.task import operators

_NOTHING = batch_mod.Batch.from_rows(())


class SourceReader:
    """Reads the partitions a source subtask owns, round-robin, tracking positions."""

    def __init__(
        self,
        step: steps.SourceStep,
        source: sources.Source,
        partitions: list[str],
        positions: dict[str, Any],
        on_rejected: Callable[[sources.Rejected], None] | None = None,
    ) -> None:
        """``source``: the step's source as this worker holds it (``Source.for_worker``)."""
        self.step_id = step.step_id
        self._on_rejected = on_rejected
        self._open: dict[str, sources.SourcePartition] = {
            p: source.open(p, positions.get(p)) for p in partitions
        }
        self._done: dict[str, Any] = {}
        self._order = list(self._open)
        self._next = 0
        self.last_partition: str | None = None
        """The partition the last non-empty batch of :meth:`poll` came from."""
        self.finished: list[str] = []
        """Partitions that ended since the caller last cleared this list."""
        self.lags: dict[str, int] = {}
        """Per open partition that can tell: records past its position when last read."""

    @property
    def exhausted(self) -> bool:
        return not self._open

    def waiting(self) -> list[str]:
        """The open partitions that wait for their turn (:attr:`SourcePartition.waiting`)."""
        return [name for name, part in self._open.items() if part.waiting]

    def poll(self) -> batch_mod.Batch | None:
        """Records from the next partition with data; empty if none had any; ``None`` at end.

        Partitions waiting for their turn start in the order given (file name
        order for ``FileSource``), so that event time moves forward as they start.
        """
        first_waiting = next((n for n in self._order if self._open[n].waiting), None)
        for _ in range(len(self._order)):
            name = self._order[self._next % len(self._order)]
            self._next += 1
            part = self._open[name]
            if name != first_waiting and part.waiting:
                continue
            got = part.next_batch()
            lag = part.lag() if got is not None else None
            if lag is not None:
                self.lags[name] = lag
            else:
                self.lags.pop(name, None)
            if self._on_rejected is not None:
                for rejected in part.rejected():
                    self._on_rejected(rejected)
            if got is None:
                self._done[name] = part.snapshot()
                part.close()
                del self._open[name]
                self._order.remove(name)
                self.finished.append(name)
                return _NOTHING if self._open else None
            if isinstance(got, pa.RecordBatch):
                if got.num_rows:
                    self.last_partition = name
                    return batch_mod.Batch.from_arrow(got)
            elif got:
                self.last_partition = name
                return batch_mod.Batch.from_rows(got)
        return _NOTHING if self._open else None

    def snapshot(self, builder: operators.SnapshotBuilder) -> None:
        positions = dict(self._done)
        positions.update({name: part.snapshot() for name, part in self._open.items()})
        builder.source_positions[self.step_id] = positions

    def close(self) -> None:
        for part in self._open.values():
            part.close()
