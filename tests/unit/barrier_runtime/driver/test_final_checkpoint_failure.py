"""The final checkpoint: a task failing during it restarts the job at once; once it completes,
its output is committed before the tasks shut down.

When every task has finished its input the driver takes a final checkpoint
and waits for it. A task that dies meanwhile (here: its snapshot of that
checkpoint crashes) means the checkpoint can never complete; the driver must
see the failure and restart from the last completed checkpoint right away (it
used to wait the whole checkpoint timeout, 60 s by default). Once it completes,
the sinks must be told before they are shut down (the driver used to shut them
down as soon as the completion was recorded, racing the message that makes
them commit: the final checkpoint's output was then lost, seen in 1 Nexmark q5
run with crashes in about 100 on a loaded machine).
"""

from __future__ import annotations

import pathlib
import time
from typing import Any

import pytest

from barrier_runtime.api import Dataflow
from barrier_runtime.checkpoint import effects
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import (
    Crash,
    FaultInjector,
    FaultPoint,
    LocalExecutor,
    TestingSink,
    TestingSource,
    check_exactly_once,
)

TIMEOUT = 30.0
"""The checkpoint timeout: the failed run would take this long before restarting."""


def test_a_crash_in_the_final_checkpoint_restarts_without_waiting_for_its_timeout(
    tmp_path: pathlib.Path,
) -> None:
    events = [{"key": k, "seq": s} for s in range(50) for k in "abc"]
    sink = TestingSink()
    flow = Dataflow("final")
    flow.source("events", TestingSource(events)).key_by("by-key", "key").map(
        "copy", lambda r: r
    ).sink("out", sink)
    store = CheckpointStore(open_object_store(str(tmp_path)), "t/final")
    # no periodic checkpoint in this short job: checkpoint 1 is the final one
    config = CheckpointConfig(interval=3_600, timeout=TIMEOUT)
    faults = FaultInjector([Crash(FaultPoint.SNAPSHOT, task="events", checkpoint_id=1)])
    started = time.monotonic()
    result = LocalExecutor(
        flow, parallelism=2, store=store, config=config, fault_injector=faults
    ).run()
    assert result.restarts == 1 and "snapshot" in result.failures[0]
    assert time.monotonic() - started < TIMEOUT / 2
    assert check_exactly_once(events, sink.output).exactly_once


def test_the_final_checkpoint_is_committed_before_the_tasks_shut_down(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The coordinator records a completion, then tells the tasks (sinks commit); the driver
    must not shut the tasks down in between, or the final checkpoint's output is never
    published. Telling the tasks is delayed here to hold that window open."""
    tell = effects.Effects.run_notify_complete

    def late(gateway: Any, committed: Any) -> None:
        time.sleep(0.3)
        tell(gateway, committed)

    monkeypatch.setattr(effects.Effects, "run_notify_complete", staticmethod(late))
    events = [{"key": k, "seq": s} for s in range(20) for k in "ab"]
    sink = TestingSink()
    flow = Dataflow("final-commit")
    flow.source("events", TestingSource(events)).sink("out", sink)
    store = CheckpointStore(open_object_store(str(tmp_path)), "t/final-commit")
    config = CheckpointConfig(interval=3_600)  # the final checkpoint is the only one
    result = LocalExecutor(flow, parallelism=1, store=store, config=config).run()
    assert result.completed_checkpoints == [1]
    assert check_exactly_once(events, sink.output).exactly_once
