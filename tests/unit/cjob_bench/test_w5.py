"""W5's parts without Spark: the data and its reference, the pipeline's windows, latency.

The reference counts must be right (checked against a plain Counter), the
pipeline must produce exactly them at P = 2 with checkpoints, and the
completion time of a window must be the read time of its last batch.
"""

from __future__ import annotations

import collections
import pathlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cjob_bench.workloads import data, w5_pipeline
from cjob_bench.workloads import w5_latency as latency

from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> data.WindowDataSet:
    return data.generate_windows(
        tmp_path_factory.mktemp("w5"),
        events=20_000,
        keys=20,
        files=4,
        span_ms=8 * 60_000,
        out_of_order=0.05,
        disorder_ms=5_000,
        seed=3,
    )


def _events(dataset: data.WindowDataSet) -> pa.Table:
    return pa.concat_tables(pq.read_table(p) for p in sorted(dataset.parquet.iterdir()))


def test_the_reference_counts_every_key_and_minute(dataset: data.WindowDataSet) -> None:
    events = _events(dataset).to_pylist()
    counter = collections.Counter((e["key"], e["ts"] - e["ts"] % 60_000) for e in events)
    ref = dataset.reference
    assert (
        dict(
            zip(
                zip(ref.keys.tolist(), ref.starts.tolist(), strict=True),
                ref.counts.tolist(),
                strict=True,
            )
        )
        == counter
    )


def test_events_are_in_order_but_for_the_displaced_ones_within_the_bound(
    dataset: data.WindowDataSet,
) -> None:
    ts = _events(dataset).column("ts").to_numpy()
    newest = np.maximum.accumulate(ts)
    behind = newest - ts
    assert 0 < np.count_nonzero(behind) < len(ts) * 0.1
    assert behind.max() <= dataset.disorder_ms


def test_the_pipeline_gives_every_window_once_with_its_exact_count(
    dataset: data.WindowDataSet, tmp_path: pathlib.Path
) -> None:
    out, reads = tmp_path / "out", tmp_path / "reads"
    reads.mkdir()
    args = ["--input", str(dataset.parquet), "--output", str(out), "--reads", str(reads)]
    flow = w5_pipeline.build_flow([*args, "--batch-size", "700"])
    store = CheckpointStore(open_object_store(str(tmp_path / "cp")), "t/w5")
    LocalExecutor(flow, parallelism=2, store=store, config=CheckpointConfig(interval=0.05)).run()
    results = pa.concat_tables(pq.read_table(p) for p in out.glob("*.parquet"))
    got = data.WindowCounts(
        results.column("key").to_numpy(),
        results.column("window_start").to_numpy(),
        results.column("count").to_numpy(),
    )
    assert data.compare(got, dataset.reference) == {"missing": 0, "extra": 0, "wrong_count": 0}
    assert len(list(reads.iterdir())) >= 1


def test_compare_finds_missing_extra_and_wrong_windows() -> None:
    expected = data.WindowCounts(np.array([1, 2]), np.array([0, 0]), np.array([5, 6]))
    got = data.WindowCounts(np.array([1, 1, 3]), np.array([0, 0, 0]), np.array([4, 4, 1]))
    assert data.compare(got, expected) == {"missing": 1, "extra": 2, "wrong_count": 1}


def test_a_window_completes_when_the_last_batch_with_an_earlier_event_is_read() -> None:
    # batches read at 1, 2, 3 s holding events from 0, 100 and 50 ms on
    complete = latency.completion_times(np.array([1.0, 2.0, 3.0]), np.array([0, 100, 50]))
    assert complete(np.array([0, 40, 60, 101])).tolist()[1:] == [1.0, 3.0, 3.0]
    assert np.isnan(complete(np.array([0]))[0])  # nothing earlier was read
