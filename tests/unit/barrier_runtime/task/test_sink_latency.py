"""Sinks measure arrival and commit latency of records stamped with their creation time."""

from __future__ import annotations

import io
import json
import pathlib

import numpy as np
import pyarrow as pa
import pytest

from barrier_runtime.api import Dataflow
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api.sources import CREATED_COLUMN
from barrier_runtime.cli import progress
from barrier_runtime.connectors import _pacing
from barrier_runtime.connectors.columnar_generator import ColumnarGeneratorSource
from barrier_runtime.connectors.generator import GeneratorSource
from barrier_runtime.core import latency, task_metrics
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.spark import message_codec
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.task import latency as task_latency
from barrier_runtime.testing import LocalExecutor, TestingSink

MS = 1_000_000


def test_created_times_read_rows_and_arrow_and_ignore_unstamped_batches() -> None:
    rows = batch_mod.Batch.from_rows([{"k": 1, CREATED_COLUMN: 5}, {"k": 2, CREATED_COLUMN: 7}])
    arrow = batch_mod.Batch.from_arrow(pa.record_batch({"k": [1], CREATED_COLUMN: [9]}))
    assert task_latency.created_times(rows).tolist() == [5, 7]  # type: ignore[union-attr]
    assert task_latency.created_times(arrow).tolist() == [9]  # type: ignore[union-attr]
    assert task_latency.created_times(batch_mod.Batch.from_rows([{"k": 1}])) is None
    unstamped = batch_mod.Batch.from_rows([{"k": 1, CREATED_COLUMN: "yesterday"}])
    assert task_latency.created_times(unstamped) is None
    partly = batch_mod.Batch.from_rows([{CREATED_COLUMN: 5}, {"k": 2}])
    assert task_latency.created_times(partly) is None


def test_commit_latency_counts_each_epoch_once_at_the_checkpoint_that_publishes_it() -> None:
    now = [1_000 * MS]
    rec = task_latency.SinkLatency(clock_ns=lambda: now[0])
    rec.observe([990 * MS, 995 * MS])  # epoch of checkpoint 1
    rec.epoch_ended(1)
    rec.observe([1_000 * MS])  # epoch of checkpoint 2 (1 is aborted, 2 publishes both)
    rec.epoch_ended(2)
    rec.observe([1_000 * MS])  # after 2: not committed yet
    assert rec.arrival.count == 4 and rec.arrival.quantile(1.0) == 0.01
    rec.committed(2, now_ns=1_200 * MS)
    assert rec.commit.count == 3
    assert rec.commit.quantile(0.0) == 0.25 and rec.commit.sum_seconds == pytest.approx(
        0.615, abs=1e-3
    )
    rec.committed(2, now_ns=1_500 * MS)  # a repeated completion counts nothing twice
    assert rec.commit.count == 3


def test_an_uncommitted_epoch_keeps_bounded_bins_whatever_its_length() -> None:
    rec = task_latency.SinkLatency(clock_ns=lambda: 10**13)
    for start in range(0, 60_000, 1_000):  # a minute of records, one every millisecond
        rec.observe(np.arange(start, start + 1_000, dtype=np.int64) * MS)
    assert len(rec._open.bins) <= task_latency.MAX_BINS
    rec.epoch_ended(1)
    rec.committed(1, now_ns=60_000 * MS)
    assert rec.commit.count == 60_000
    assert rec.commit.sum_seconds / 60_000 == pytest.approx(30.0, abs=0.01)
    assert rec.commit.quantile(0.25) == 30.0 and rec.commit.quantile(0.75) == 60.0


def test_a_rate_limited_budget_emits_what_is_due_at_once_not_a_full_batch() -> None:
    now = [0.0]
    budget = _pacing.EmissionBudget(
        batch_size=10_000, end=None, rate=100.0, position=0, clock=lambda: now[0]
    )
    now[0] = 0.031
    assert budget.next_count(0) == 3
    assert budget.next_count(3) == 0


@pytest.mark.parametrize("columnar", [False, True], ids=["rows", "arrow"])
def test_sinks_report_latency_to_the_driver(columnar: bool, tmp_path: pathlib.Path) -> None:
    flow = Dataflow("latency")
    source = (
        ColumnarGeneratorSource(events=400, keys=8, batch_size=50, stamp_created=True)
        if columnar
        else GeneratorSource(
            keys=8, events_per_key=50, partitions=2, batch_size=50, stamp_created=True
        )
    )
    flow.source("events", source).sink("out", TestingSink())
    executor = LocalExecutor(
        flow, parallelism=2, store=_store(tmp_path), config=CheckpointConfig(interval=0.05)
    )
    executor.run()
    metrics = executor.runtime_metrics()
    assert set(metrics.arrival_latency) == {"out"}
    assert metrics.arrival_latency["out"].count == 400
    assert metrics.commit_latency["out"].count == 400  # the final checkpoint publishes all
    assert metrics.commit_latency["out"].sum_seconds >= metrics.arrival_latency["out"].sum_seconds


def test_unstamped_records_report_no_latency(tmp_path: pathlib.Path) -> None:
    flow = Dataflow("plain")
    flow.source("events", GeneratorSource(keys=4, events_per_key=5, partitions=2)).sink(
        "out", TestingSink()
    )
    executor = LocalExecutor(flow, parallelism=2, store=_store(tmp_path))
    executor.run()
    assert executor.runtime_metrics().arrival_latency == {}


def test_latency_travels_from_spark_workers_in_their_metrics() -> None:
    sent = task_metrics.AttemptMetrics(
        arrival_latency={"out": latency.LatencyHistogram.of_seconds([0.003, 0.2])}
    )
    received = message_codec.decode(message_codec.encode(sent))
    assert received == sent
    total = task_metrics.AttemptMetrics()
    total.add(received)
    total.add(received)
    assert total.arrival_latency["out"].count == 4


def _store(path: pathlib.Path) -> CheckpointStore:
    return CheckpointStore(open_object_store(str(path)), "default/latency")


def test_the_live_view_shows_the_latency_of_its_last_window(tmp_path: pathlib.Path) -> None:
    flow = Dataflow("live")
    source = GeneratorSource(
        keys=8, events_per_key=400, partitions=2, rate_per_partition=2000, stamp_created=True
    )
    flow.source("events", source).sink("out", TestingSink())
    executor = LocalExecutor(
        flow, parallelism=2, store=_store(tmp_path), config=CheckpointConfig(interval=0.2)
    )
    stream = io.StringIO()
    with progress.ProgressView(
        executor, progress.Output(json_lines=True, stream=stream), status_every=0.1
    ):
        executor.run()
    statuses = [json.loads(line) for line in stream.getvalue().splitlines()]
    measured = [s for s in statuses if s["event"] == "status" and "latency_p99_ms" in s]
    assert measured, statuses
    assert all(0 < s["latency_p50_ms"] <= s["latency_p99_ms"] for s in measured)
    assert any("commit_latency_p99_ms" in s for s in measured)
