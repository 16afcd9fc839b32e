"""Exactly-once of the vectorised path under injected crashes (in-process executor).

The job: Arrow batches from the columnar generator (per-key sequence numbers),
keyed by column (vectorised routing), a vectorised running sum per key, a
transactional sink; P = 3, a checkpoint every 100 ms. Crashes hit every point
of the checkpoint life cycle. The output must equal the crash-free run's and
the analytic running sums: lost = duplicated = out-of-order = 0. With
unaligned checkpoints, in-flight batches are persisted as rows and replayed
through the sum's row path, so both of its paths are exercised.
"""

from __future__ import annotations

import itertools

import pytest

from barrier_runtime.api import Dataflow
from barrier_runtime.connectors.columnar_generator import ColumnarGeneratorSource
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import (
    Crash,
    FaultInjector,
    FaultPoint,
    LocalExecutor,
    TestingSink,
    check_exactly_once,
)

P = FaultPoint
SOURCE = dict(
    events=150_000,
    keys=300,
    partitions=6,
    batch_size=500,
    key_order="cyclic",
    rate_per_partition=8000.0,
)


def _crash_plan() -> list[Crash]:
    return [
        Crash(P.PROCESSING, task="total", subtask=0, after_records=12_000),
        Crash(P.SNAPSHOT, task="total", checkpoint_id=3),
        Crash(P.UPLOAD, task="total", checkpoint_id=5),
        Crash(P.RESTORE, attempt=3),
        Crash(P.COMMIT, checkpoint_id=7),
        Crash(P.PROCESSING, task="events", subtask=2, after_records=6_000, attempt=5),
        Crash(P.SNAPSHOT, task="events", checkpoint_id=10),
        Crash(P.UPLOAD, task="events", checkpoint_id=12),
    ]


def _flow(sink: TestingSink) -> Dataflow:
    flow = Dataflow("vectorised-sum")
    source = ColumnarGeneratorSource(**SOURCE)  # type: ignore[arg-type]
    flow.source("events", source).key_by("by-key", "key").sum("total", "value").sink("out", sink)
    return flow


def _run(tmp_path, name, *, crashes=(), unaligned=False):
    sink = TestingSink()
    store = CheckpointStore(open_object_store(str(tmp_path / name)), f"default/{name}")
    injector = FaultInjector(list(crashes))
    executor = LocalExecutor(
        _flow(sink),
        parallelism=3,
        store=store,
        config=CheckpointConfig(interval=0.1, unaligned=unaligned),
        fault_injector=injector,
        max_restarts=20,
        channel_capacity=4,
    )
    return sink.output, executor.run(), injector


def _analytic() -> list[dict]:
    source = ColumnarGeneratorSource(**SOURCE)  # type: ignore[arg-type]
    out = []
    for p in range(SOURCE["partitions"]):
        rows = source.events_between(p, 0, source.partition_events(p)).to_pylist()
        for _, group in itertools.groupby(
            sorted(rows, key=lambda r: (r["key"], r["seq"])), key=lambda r: r["key"]
        ):
            total = 0
            for r in group:
                total += r["value"]
                out.append({**r, "sum": total})
    return out


@pytest.fixture(scope="module")
def crash_free(tmp_path_factory):
    output, result, _ = _run(tmp_path_factory.mktemp("clean"), "clean")
    assert result.restarts == 0
    report = check_exactly_once(_analytic(), output)
    assert report.exactly_once and report.actual == SOURCE["events"], report
    return output


@pytest.mark.parametrize("unaligned", [False, True], ids=["aligned", "unaligned"])
def test_vectorised_sum_is_exactly_once_with_crashes_everywhere(tmp_path, crash_free, unaligned):
    output, result, injector = _run(tmp_path, "eo", crashes=_crash_plan(), unaligned=unaligned)
    report = check_exactly_once(crash_free, output)
    print(
        "exactly-once:",
        report.as_dict(),
        "restarts:",
        result.restarts,
        "checkpoints:",
        len(result.completed_checkpoints),
    )
    assert {crash.point for crash, _ in injector.fired} == set(FaultPoint)
    assert result.restarts == len(injector.fired) >= 7
    assert any(cid is not None for cid in result.restored_from)
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0)
