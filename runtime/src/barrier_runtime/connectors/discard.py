"""A sink that drops everything: the end of benchmark pipelines that measure the steps before it.

It publishes nothing, so it is trivially exactly-once: ``pre_commit``
returns no transaction and ``commit`` is never needed. Each writer counts
what it dropped. Arrow batches are dropped as they are (no conversion to rows).

>>> import pyarrow as pa
>>> writer = DiscardSink().writer("out", 0, 1)
>>> writer.write([{"x": 1}])
>>> writer.write_batch(pa.record_batch({"x": [1, 2]}))
>>> writer.records, writer.pre_commit(1)
(3, None)
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import sinks


class DiscardSink(sinks.Sink):
    def writer(self, step_id: str, subtask: int, parallelism: int) -> DiscardWriter:
        return DiscardWriter()

    def commit(self, transaction: sinks.Transaction) -> None:
        """Nothing was ever staged; committing is a no-op."""


class DiscardWriter(sinks.SinkWriter):
    def __init__(self) -> None:
        self.records = 0

    def write(self, records: Sequence[batch_mod.Record]) -> None:
        self.records += len(records)

    def write_batch(self, batch: pa.RecordBatch) -> None:
        self.records += batch.num_rows

    def pre_commit(self, checkpoint_id: int) -> sinks.Transaction | None:
        return None
