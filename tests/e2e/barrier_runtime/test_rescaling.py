"""Rescaling: a job checkpointed at P = 2 restores at P = 3 and at P = 1 with identical results.

The first run is killed (no restart budget) after a few checkpoints; each
rescaled run starts from a copy of the same store and output directory,
restores the same checkpoint, re-publishes its pending transactions and runs
to the end. The published output must equal the crash-free output exactly.
"""

from __future__ import annotations

import shutil

import pytest

from barrier_runtime.connectors.files import FileSink
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.demo import running_count_flow
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

EVENTS = dict(keys=200, events_per_key=150, partitions=4, batch_size=100, rate_per_partition=6000)


def _executor(world, parallelism, incremental=False, **kwargs):
    store = CheckpointStore(open_object_store(str(world / "store")), "default/rescale")
    flow = running_count_flow(FileSink(str(world / "out")), **EVENTS)
    config = CheckpointConfig(interval=0.1, incremental=incremental)
    return LocalExecutor(flow, parallelism=parallelism, store=store, config=config, **kwargs), store


def _final_counts(records) -> dict[str, int]:
    return {r["key"]: r["count"] for r in records}


@pytest.fixture(scope="module", params=[False, True], ids=["full", "incremental"])
def checkpointed_at_2(request, tmp_path_factory):
    incremental = request.param
    clean = tmp_path_factory.mktemp("clean")
    executor, _ = _executor(clean, 2)
    executor.run()
    expected = list(FileSink(str(clean / "out")).read_committed())
    assert len(expected) == 30_000

    world = tmp_path_factory.mktemp("p2")
    executor, store = _executor(
        world,
        2,
        incremental,
        fault_injector=FaultInjector([Crash(FaultPoint.SNAPSHOT, checkpoint_id=5)]),
        max_restarts=0,
    )
    with pytest.raises(JobFailedError, match="more than the restart budget of 0"):
        executor.run()
    latest = store.select_restore_point()
    assert latest is not None and latest.fingerprint.parallelism == 2
    deltas = [h for h in latest.state_handles if h.delta]
    assert bool(deltas) is incremental  # the restore reads a base and its deltas
    published_before = list(FileSink(str(world / "out")).read_committed())
    assert 0 < len(published_before) < len(expected)
    return world, latest.checkpoint_id, expected, incremental


@pytest.mark.parametrize("parallelism", [3, 1, 2])
def test_restore_at_another_parallelism(tmp_path, checkpointed_at_2, parallelism) -> None:
    world, checkpoint_id, expected, incremental = checkpointed_at_2
    copy = tmp_path / "world"
    shutil.copytree(world, copy)
    executor, store = _executor(copy, parallelism, incremental, restore_from=checkpoint_id)
    result = executor.run()
    assert result.restored_from == [checkpoint_id]
    output = list(FileSink(str(copy / "out")).read_committed())
    report = check_exactly_once(expected, output)
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0), report
    assert _final_counts(output) == _final_counts(expected)
    final = store.load(result.final_checkpoint)
    assert final.fingerprint.parallelism == parallelism
    keyed = [h for h in final.state_handles if h.step_id == "count"]
    assert len({h.subtask for h in keyed}) == parallelism
    if not incremental:
        assert len(keyed) == parallelism
