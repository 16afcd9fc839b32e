"""Exactly-once under injected crashes, proven against a crash-free run (in-process executor).

The job: a keyed running count over 200,000 generated events with per-key
sequence numbers, P = 3, a checkpoint every 100 ms. Crashes are injected at
every point of the checkpoint life cycle: while processing, during the
synchronous snapshot, during the asynchronous upload, during restore and
during the sinks' commit. The checker must report zero lost, duplicated and
out-of-order records; in at-least-once mode it must report zero lost.
"""

from __future__ import annotations

import pytest

from barrier_runtime.core.types import CheckpointConfig, CheckpointingMode
from barrier_runtime.demo import running_count_flow
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
EVENTS = dict(keys=500, events_per_key=400, partitions=6, batch_size=200, rate_per_partition=8000)


def _crash_plan() -> list[Crash]:
    # Spread over the life cycle; the attempt filters make them land in different attempts.
    return [
        Crash(P.PROCESSING, subtask=0, after_records=15_000),
        Crash(P.SNAPSHOT, task="count", checkpoint_id=3),
        Crash(P.UPLOAD, task="count", checkpoint_id=5),
        Crash(P.RESTORE, attempt=3),
        Crash(P.COMMIT, checkpoint_id=7),
        Crash(P.PROCESSING, subtask=2, after_records=8_000, attempt=5),
        Crash(P.SNAPSHOT, task="events", checkpoint_id=10),
        Crash(P.UPLOAD, task="events", checkpoint_id=12),
        Crash(P.COMMIT, checkpoint_id=14),
        Crash(P.RESTORE, attempt=9),
        Crash(P.PROCESSING, subtask=1, after_records=5_000, attempt=10),
        Crash(P.SNAPSHOT, task="count", checkpoint_id=18),
    ]


def _run(tmp_path, name, *, crashes=(), mode=CheckpointingMode.EXACTLY_ONCE, unaligned=False):
    sink = TestingSink()
    store = CheckpointStore(open_object_store(str(tmp_path / name)), f"default/{name}")
    injector = FaultInjector(list(crashes))
    executor = LocalExecutor(
        running_count_flow(sink, **EVENTS),
        parallelism=3,
        store=store,
        config=CheckpointConfig(interval=0.1, mode=mode, unaligned=unaligned),
        fault_injector=injector,
        max_restarts=20,
    )
    result = executor.run()
    return sink.output, result, injector


@pytest.fixture(scope="module")
def crash_free(tmp_path_factory):
    output, result, _ = _run(tmp_path_factory.mktemp("clean"), "clean")
    assert result.restarts == 0
    assert len(output) == 200_000
    return output


@pytest.mark.parametrize("unaligned", [False, True], ids=["aligned", "unaligned"])
def test_exactly_once_with_crashes_everywhere(tmp_path, crash_free, unaligned) -> None:
    output, result, injector = _run(tmp_path, "eo", crashes=_crash_plan(), unaligned=unaligned)
    fired_points = {crash.point for crash, _ in injector.fired}
    report = check_exactly_once(crash_free, output)
    print(
        "exactly-once:",
        report.as_dict(),
        "restarts:",
        result.restarts,
        "checkpoints:",
        len(result.completed_checkpoints),
    )
    assert len(injector.fired) >= 10, injector.fired
    assert fired_points == set(FaultPoint)
    assert result.restarts == len(injector.fired)
    assert len(result.completed_checkpoints) >= 8
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0)
    assert all(r["count"] == r["seq"] + 1 for r in output)


def test_at_least_once_loses_nothing(tmp_path, crash_free) -> None:
    output, result, injector = _run(
        tmp_path, "alo", crashes=_crash_plan(), mode=CheckpointingMode.AT_LEAST_ONCE
    )
    report = check_exactly_once(crash_free, output, identity=("key", "seq"))
    print("at-least-once:", report.as_dict(), "restarts:", result.restarts)
    assert len(injector.fired) >= 10
    assert report.lost == 0


def test_the_checker_catches_a_sink_without_transactions(tmp_path, crash_free) -> None:
    """Guard for the proof itself: a sink that publishes on write duplicates after crashes."""
    from barrier_runtime.api import Sink, SinkWriter

    published: list[dict] = []

    class EagerSink(Sink):
        def writer(self, step_id, subtask, parallelism):
            class W(SinkWriter):
                def write(self, records):
                    published.extend(records)

                def pre_commit(self, checkpoint_id):
                    return None

            return W()

        def commit(self, transaction):
            raise AssertionError("never called")

    store = CheckpointStore(open_object_store(str(tmp_path / "eager")), "default/eager")
    LocalExecutor(
        running_count_flow(EagerSink(), **EVENTS),
        parallelism=3,
        store=store,
        config=CheckpointConfig(interval=0.1),
        fault_injector=FaultInjector([Crash(P.PROCESSING, subtask=0, after_records=15_000)]),
    ).run()
    assert check_exactly_once(crash_free, published).duplicated > 0
