"""Rows that one step converted to Arrow stay the rows they are for every other consumer.

A batch step converts its input to Arrow, and Arrow may change rows (a
tuple comes back as a list). The same batch object also reaches the
other consumers of that stream, which must see the records unchanged.
"""

from __future__ import annotations

import tempfile

from barrier_runtime.api import Dataflow
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor, TestingSink, TestingSource

ROWS = [{"k": "a", "v": (1, 2)}, {"k": "b", "v": (3, 4)}]


def test_a_sink_next_to_a_batch_step_writes_the_rows_unchanged() -> None:
    batch_out, rows_out = TestingSink(), TestingSink()
    flow = Dataflow("branches")
    events = flow.source("events", TestingSource(ROWS))
    events.map_batches("as-arrow", lambda batch: batch).sink("batch-out", batch_out)
    events.sink("rows-out", rows_out)
    store = CheckpointStore(open_object_store(tempfile.mkdtemp()), "tests/branches")
    LocalExecutor(flow, parallelism=1, store=store).run()
    assert rows_out.output == ROWS
    assert batch_out.output == [{"k": "a", "v": [1, 2]}, {"k": "b", "v": [3, 4]}]
