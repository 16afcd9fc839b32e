"""Files waiting for their turn (``max_open_files``) hold back no watermark.

Three Parquet files in event-time order are read one at a time. The first
file's windows must fire while that file is being read, not once every file
has started (which, with many files, would hold every window to the end).
"""

from __future__ import annotations

import pathlib
import threading
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from barrier_runtime.api import Dataflow, sinks
from barrier_runtime.api.watermarks import BoundedOutOfOrderness
from barrier_runtime.api.windows import Tumbling
from barrier_runtime.connectors.file_source import FileSource
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor

FILES, ROWS, WINDOW = 3, 2_000, 100


class Timeline:
    """What happened, in order: ``("read", max ts)`` and ``("fired", window end)``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[str, int]] = []

    def add(self, what: str, value: int) -> None:
        with self.lock:
            self.events.append((what, value))


class TimelineSink(sinks.Sink):
    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline

    def writer(self, step_id: str, subtask: int, parallelism: int) -> sinks.SinkWriter:
        return _Writer(self.timeline)

    def commit(self, transaction: sinks.Transaction) -> None:
        """Nothing staged."""


class _Writer(sinks.SinkWriter):
    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self.rows: list[dict[str, Any]] = []

    def write(self, records: Sequence[dict[str, Any]]) -> None:
        for record in records:
            self.timeline.add("fired", record["window_end"])
        self.rows.extend(records)

    def pre_commit(self, checkpoint_id: int) -> sinks.Transaction | None:
        return None


def test_the_first_files_windows_fire_before_the_last_file_starts(tmp_path: pathlib.Path) -> None:
    for f in range(FILES):
        ts = pa.array(range(f * ROWS, (f + 1) * ROWS), pa.int64())
        pq.write_table(pa.table({"k": pa.array([1] * ROWS), "ts": ts}), tmp_path / f"{f}.parquet")
    timeline = Timeline()

    def probe(batch: pa.RecordBatch) -> pa.RecordBatch:
        timeline.add("read", pc.max(batch.column("ts")).as_py())
        return batch

    flow = Dataflow("waiting")
    events = flow.source(
        "files",
        FileSource(str(tmp_path), batch_size=100, max_open_files=1),
        timestamps="ts",
        watermarks=BoundedOutOfOrderness(0),
    )
    counts = events.map_batches("probe", probe).key_by("by", "k")
    counts.window_agg("w", Tumbling(WINDOW), timestamps="ts", how="count").sink(
        "out", TimelineSink(timeline)
    )
    store = CheckpointStore(open_object_store(str(tmp_path / "cp")), "t/waiting")
    LocalExecutor(flow, parallelism=1, store=store, config=CheckpointConfig(interval=1e9)).run()

    fired = [i for i, (what, _) in enumerate(timeline.events) if what == "fired"]
    assert len(fired) == FILES * ROWS // WINDOW  # every window, once
    last_file_starts = next(
        i for i, (what, ts) in enumerate(timeline.events) if what == "read" and ts >= 2 * ROWS
    )
    assert fired[0] < last_file_starts


def test_a_file_waits_only_once_it_found_every_slot_taken(tmp_path: pathlib.Path) -> None:
    """Untried, a file may start at once: it is not waiting (and so holds watermarks back)."""
    for f in range(2):
        pq.write_table(pa.table({"ts": pa.array([f], pa.int64())}), tmp_path / f"{f}.parquet")
    source = FileSource(str(tmp_path), max_open_files=1)
    first, second = source.open("0.parquet", None), source.open("1.parquet", None)
    assert not first.waiting and not second.waiting
    assert first.next_batch() is not None
    assert second.next_batch() == [] and second.waiting
    assert first.next_batch() is None  # done: its slot is free
    assert second.next_batch() is not None and not second.waiting


def test_each_worker_copy_of_a_file_source_has_its_own_slots(tmp_path: pathlib.Path) -> None:
    """As each Spark worker loads its own source: one worker's open file takes no slot
    of another's (the in-process executor asks each slice for its copy)."""
    for f in range(2):
        pq.write_table(pa.table({"ts": pa.array([f], pa.int64())}), tmp_path / f"{f}.parquet")
    source = FileSource(str(tmp_path), max_open_files=1)
    one, two = source.for_worker(), source.for_worker()
    assert one is not source and two is not one and one.url == source.url
    first, second = one.open("0.parquet", None), two.open("1.parquet", None)
    assert first.next_batch() is not None
    assert second.next_batch() is not None and not second.waiting
    shared = source.open("1.parquet", None)
    assert source.open("0.parquet", None).next_batch() is not None
    assert shared.next_batch() == [] and shared.waiting  # within one copy, slots are shared
