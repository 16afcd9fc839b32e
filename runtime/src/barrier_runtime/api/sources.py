"""The source contract: partitioned, replayable, resumable after the last emitted position.

A :class:`Source` names its partitions; the runtime assigns partitions to
subtasks and opens each one with the position stored in the restored
checkpoint (``None`` on a fresh start). A partition hands out batches and, at
every checkpoint, a :meth:`SourcePartition.snapshot` of its position: the
position *after* the last record it has returned. Positions must be
JSON-serialisable values that are never mutated afterwards (they are shared
with the checkpoint being written).

Because positions are kept per partition name, a checkpoint taken at one
parallelism can be restored at another: partitions are simply re-assigned.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from barrier_runtime.api import batch as batch_mod

Position = Any
"""A JSON-serialisable resume position."""

CREATED_COLUMN = "event_created"
"""The opt-in column that stamps a record with its creation time, for latency metrics.

A source (or any step) that sets it to an ``int`` of nanoseconds since the Unix
epoch (``time.time_ns()`` when the event was created) lets every sink the
record reaches measure *arrival latency* (sink write time - creation) and
*commit latency* (checkpoint commit time - creation); the driver exports both
as ``cjob_sink_arrival_latency_seconds`` and ``cjob_sink_commit_latency_seconds``
histograms and the live view of ``cjob run`` shows their p50/p99. Records
without it (or with a non-integer value) are not measured. The generator
sources add it with ``stamp_created=True``. Creation times come from the
producer's clock: latencies across machines include their clock skew.

>>> import time
>>> record = {"key": "k1", CREATED_COLUMN: time.time_ns()}
"""


class SourcePartition(abc.ABC):
    """One independently readable, replayable slice of a source."""

    @abc.abstractmethod
    def next_batch(self) -> Sequence[batch_mod.Record] | pa.RecordBatch | None:
        """The next records (empty if none are ready yet), or ``None`` at the end.

        Records come as a sequence of rows or, on the fast path, as one Arrow
        ``RecordBatch`` that batch steps and keyed routing use without conversion.
        """

    @abc.abstractmethod
    def snapshot(self) -> Position:
        """The position to resume from: just after the last record returned."""

    @property
    def waiting(self) -> bool:
        """``True`` while the partition cannot start because it waits for its turn.

        A source that rations what it holds open (``FileSource``'s
        ``max_open_files``) says so here. A waiting partition holds back no
        watermark: as with a split that Flink has not assigned yet, its records
        may be late when it starts, so such a source should start its partitions
        in event-time order (files named in time order).
        """
        return False

    def close(self) -> None:  # noqa: B027 - optional hook with a no-op default
        """Release resources; called once when the subtask stops."""

    def lag(self) -> int | None:
        """How many records the partition holds past the position, as last seen
        (``None``: this source cannot tell). Reported as ``cjob_source_lag_records``;
        called by the reading thread after each batch, so it should be cheap."""
        return None

    def rejected(self) -> Sequence[Rejected]:
        """Records passed over since the last call (``on_error`` ``"skip"`` or
        ``"dead-letter"``): the reader counts them or sends them to dead letters
        with the positions that already lie past them."""
        return ()


@dataclass(frozen=True, slots=True)
class Rejected:
    """A record a source could not read: where it is, why, and its text."""

    position: str
    """E.g. ``s3://in/a.jsonl line 701``."""
    error: str
    raw: str | None = None


class Source(abc.ABC):
    """A partitioned source. Subclasses are plain, picklable configuration objects."""

    @abc.abstractmethod
    def partitions(self) -> Sequence[str]:
        """Stable names of all partitions."""

    @abc.abstractmethod
    def open(self, partition: str, resume_from: Position | None) -> SourcePartition:
        """Open ``partition`` positioned just after ``resume_from`` (or at its start)."""

    def for_worker(self) -> Source:
        """This source as one worker holds it: what its partitions share in a process.

        On Spark every worker process loads the pipeline itself, so each holds its
        own source object; the in-process executor runs every slice in one process
        and asks each slice (in each attempt) for its own copy with this method, so
        that both hosts give the same results. A source whose partitions share
        something in a process (``FileSource``'s ``max_open_files`` slots) returns
        a copy with that part fresh; the default, for sources that share nothing,
        is the source itself.
        """
        return self


def assign_partitions(partitions: Sequence[str], subtask: int, parallelism: int) -> list[str]:
    """The partitions subtask ``subtask`` reads: a stable round-robin over sorted names.

    >>> assign_partitions(["p2", "p0", "p1", "p3"], 1, 3)
    ['p1']
    >>> assign_partitions(["p2", "p0", "p1", "p3"], 0, 3)
    ['p0', 'p3']
    """
    return [p for i, p in enumerate(sorted(partitions)) if i % parallelism == subtask]
