"""The bound: what the configuration lets one worker hold (the essay in ``probe/__init__``)."""

from __future__ import annotations

import pickle
import sys
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from barrier_runtime.api import Record
from cjob_bench.probe import workload

MiB = 1 << 20
_READ_BUFFER = 256 * 1024
"""Per inbound connection (``channels.wire._READ_BUFFER``)."""


@dataclass(frozen=True, slots=True)
class MemoryBound:
    """What one worker may hold, by cause; bytes (the essay in ``cjob_bench.probe``)."""

    batches: int
    """``(2P-1)·C`` batches in channels plus 2 in hand."""
    records: int
    """``batches · batch_size``: no channel batch has more records than a source batch."""
    record_bytes: int
    """One padded record as Python row plus its Arrow copy (a batch caches both forms)."""
    channel_data: int
    channel_state: int
    """The unaligned checkpoint's pickled in-flight records: at most what the channels hold."""
    read_buffers: int
    sink_staging: int
    allocator_slack: int
    """Freed memory CPython and malloc keep (fragmentation, thread arenas): a fixed allowance."""

    @property
    def total(self) -> int:
        """The most a worker's RSS may grow above its baseline."""
        return (
            self.channel_data
            + self.channel_state
            + self.read_buffers
            + self.sink_staging
            + self.allocator_slack
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "batches": self.batches,
            "records": self.records,
            "record_bytes": self.record_bytes,
            "channel_data_mib": mib(self.channel_data),
            "channel_state_mib": mib(self.channel_state),
            "read_buffers_mib": mib(self.read_buffers),
            "sink_staging_mib": mib(self.sink_staging),
            "allocator_slack_mib": mib(self.allocator_slack),
            "total_mib": mib(self.total),
        }


def in_flight_bound(
    job: workload.ThrottledJob,
    channel_capacity: int,
    checkpoint_interval: float,
    allocator_slack: int = 16 * MiB,
) -> MemoryBound:
    """The bound for ``job`` with channels of ``channel_capacity`` batches."""
    p = job.parallelism
    batches = (2 * p - 1) * channel_capacity + 2
    records = batches * job.batch_size
    row = workload.padder(job.payload_bytes)({"key": f"k{job.keys - 1}", "seq": job.events_per_key})
    arrow = pa.RecordBatch.from_pylist([row])
    record_bytes = _row_bytes(row) + arrow.nbytes
    pickled = len(pickle.dumps(row, protocol=5))
    out_row = {"key": row["key"], "seq": row["seq"], "count": row["seq"] + 1}
    staged = int(job.sink_rate * 2 * checkpoint_interval) * _row_bytes(out_row)
    return MemoryBound(
        batches=batches,
        records=records,
        record_bytes=record_bytes,
        channel_data=records * record_bytes,
        channel_state=records * pickled,
        read_buffers=(p - 1) * _READ_BUFFER,
        sink_staging=staged,
        allocator_slack=allocator_slack,
    )


def records_in_flight_bound(job: workload.ThrottledJob, channel_capacity: int) -> int:
    """Records the whole job may hold between the source and the sink: ``P²·C`` batches + 2P."""
    p = job.parallelism
    return (p * p * channel_capacity + 2 * p) * job.batch_size


def _row_bytes(row: Record) -> int:
    return sys.getsizeof(row) + sum(sys.getsizeof(k) + sys.getsizeof(v) for k, v in row.items())


def mib(n: int | None) -> float | None:
    """Bytes in MiB, rounded for reports."""
    return None if n is None else round(n / MiB, 2)
