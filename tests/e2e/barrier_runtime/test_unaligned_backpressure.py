"""Unaligned checkpoints under back-pressure: they complete, carry channel state, and recovery
from them is exactly-once. (Their speed-up over aligned ones is measured in bench/.)"""

from __future__ import annotations

from barrier_runtime.core import metadata
from barrier_runtime.core.types import CheckpointConfig
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

JOB = dict(keys=150, events_per_key=200, partitions=3, batch_size=100, sink_delay_per_batch=0.01)


def _run(tmp_path, name, *, unaligned, crashes=()):
    sink = TestingSink()
    store = CheckpointStore(open_object_store(str(tmp_path / name)), f"default/{name}")
    result = LocalExecutor(
        running_count_flow(sink, **JOB),
        parallelism=3,
        store=store,
        config=CheckpointConfig(interval=0.2, unaligned=unaligned, retained=1000),
        channel_capacity=32,
        fault_injector=FaultInjector(list(crashes)),
    ).run()
    return sink.output, result, store


def test_recovery_from_an_unaligned_checkpoint_is_exactly_once(tmp_path) -> None:
    expected, _, _ = _run(tmp_path, "aligned", unaligned=False)
    crash = Crash(FaultPoint.PROCESSING, task="count", subtask=0, after_records=5_000)
    output, result, store = _run(tmp_path, "unaligned", unaligned=True, crashes=[crash])
    assert result.restarts == 1
    restored = [cid for cid in result.restored_from if cid is not None]
    assert restored, "the crash happened after a completed checkpoint"
    channel_state = [
        h for h in store.load(restored[0]).state_handles if h.kind is metadata.HandleKind.CHANNEL
    ]
    assert sum(h.size for h in channel_state) > 0, "in-flight data was captured and replayed"
    report = check_exactly_once(expected, output)
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0), report
