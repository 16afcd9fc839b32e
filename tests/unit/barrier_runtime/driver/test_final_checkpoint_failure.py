"""A task failing during the final checkpoint restarts the job at once, not after the checkpoint timeout.

When every task has finished its input the driver takes a final checkpoint
and waits for it. A task that dies meanwhile (here: its snapshot of that
checkpoint crashes) means the checkpoint can never complete; the driver must
see the failure and restart from the last completed checkpoint right away.
It used to wait the whole checkpoint timeout (60 s by default) first.
"""

from __future__ import annotations

import pathlib
import time

from barrier_runtime.api import Dataflow
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
