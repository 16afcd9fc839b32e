"""Recovery from an unaligned checkpoint reads keyed and channel state without unpickling.

The job runs with ``pickle.loads``, ``pickle.load`` and ``pickle.Unpickler``
replaced by traps: a restore that unpickled anything would fail the job (or be
recorded below), so exactly-once output after a crash proves that channel state
and keyed state were read back through the data-only formats.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest

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

JOB = dict(keys=60, events_per_key=120, partitions=3, batch_size=60, sink_delay_per_batch=0.01)


def _run(tmp_path: Any, name: str, *, unaligned: bool, crashes: list[Crash]) -> Any:
    sink = TestingSink()
    store = CheckpointStore(open_object_store(str(tmp_path / name)), f"default/{name}")
    result = LocalExecutor(
        running_count_flow(sink, **JOB),
        parallelism=3,
        store=store,
        config=CheckpointConfig(interval=0.1, unaligned=unaligned, retained=1000),
        channel_capacity=32,
        fault_injector=FaultInjector(crashes),
    ).run()
    return sink.output, result, store


def test_unaligned_restore_never_unpickles(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    expected, _, _ = _run(tmp_path, "reference", unaligned=False, crashes=[])
    unpickled: list[str] = []

    def trap(name: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            unpickled.append(name)
            raise AssertionError(f"{name} called during the job")

        return refuse

    monkeypatch.setattr(pickle, "loads", trap("pickle.loads"))
    monkeypatch.setattr(pickle, "load", trap("pickle.load"))
    monkeypatch.setattr(pickle, "Unpickler", trap("pickle.Unpickler"))
    crash = Crash(FaultPoint.PROCESSING, task="count", subtask=0, after_records=1_200)
    output, result, store = _run(tmp_path, "unaligned", unaligned=True, crashes=[crash])

    assert unpickled == []
    assert result.restarts == 1
    restored = [cid for cid in result.restored_from if cid is not None]
    assert restored, "the crash happened after a completed checkpoint"
    handles = store.load(restored[0]).state_handles
    assert sum(h.size for h in handles if h.kind is metadata.HandleKind.CHANNEL) > 0
    assert sum(h.size for h in handles if h.kind is metadata.HandleKind.KEYED) > 0
    report = check_exactly_once(expected, output)
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0), report
