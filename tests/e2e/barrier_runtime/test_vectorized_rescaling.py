"""Rescaling the vectorised sum: a checkpoint taken at P = 2 restores at P = 3 and P = 1.

The first run dies (no restart budget) after a few checkpoints; each rescaled
run restores the same checkpoint from a copy of the store and output and runs
to the end. The published running sums must equal the crash-free ones exactly,
which they can only do if every key's stored sum reached its new owner.
"""

from __future__ import annotations

import shutil

import pytest

from barrier_runtime.api import Dataflow
from barrier_runtime.connectors.columnar_generator import ColumnarGeneratorSource
from barrier_runtime.connectors.files import FileSink
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import (
    Crash,
    FaultInjector,
    FaultPoint,
    JobFailedError,
    LocalExecutor,
    check_exactly_once,
)


def _executor(world, parallelism, **kwargs):
    store = CheckpointStore(open_object_store(str(world / "store")), "default/rescale")
    source = ColumnarGeneratorSource(
        events=40_000,
        keys=250,
        partitions=4,
        batch_size=400,
        key_order="cyclic",
        rate_per_partition=5000.0,
    )
    flow = Dataflow("vectorised-rescale")
    flow.source("events", source).key_by("by-key", "key").sum("total", "value").sink(
        "out", FileSink(str(world / "out"))
    )
    config = CheckpointConfig(interval=0.1)
    return LocalExecutor(flow, parallelism=parallelism, store=store, config=config, **kwargs), store


@pytest.fixture(scope="module")
def checkpointed_at_2(tmp_path_factory):
    clean = tmp_path_factory.mktemp("clean")
    _executor(clean, 2)[0].run()
    expected = list(FileSink(str(clean / "out")).read_committed())
    assert len(expected) == 40_000
    world = tmp_path_factory.mktemp("p2")
    crash = FaultInjector([Crash(FaultPoint.SNAPSHOT, checkpoint_id=5)])
    executor, store = _executor(world, 2, fault_injector=crash, max_restarts=0)
    with pytest.raises(JobFailedError):
        executor.run()
    latest = store.select_restore_point()
    assert latest is not None and latest.fingerprint.parallelism == 2
    assert 0 < len(list(FileSink(str(world / "out")).read_committed())) < len(expected)
    return world, latest.checkpoint_id, expected


@pytest.mark.parametrize("parallelism", [3, 1])
def test_vectorised_sums_restore_at_another_parallelism(tmp_path, checkpointed_at_2, parallelism):
    world, checkpoint_id, expected = checkpointed_at_2
    copy = tmp_path / "world"
    shutil.copytree(world, copy)
    executor, store = _executor(copy, parallelism, restore_from=checkpoint_id)
    result = executor.run()
    assert result.restored_from == [checkpoint_id]
    output = list(FileSink(str(copy / "out")).read_committed())
    report = check_exactly_once(expected, output)
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0), report
    final = store.load(result.final_checkpoint)
    handles = [h for h in final.state_handles if h.step_id == "total"]
    assert len(handles) == parallelism
