"""An attempt counts as started (ready, ``startup_seconds``) only once every subtask has
restored its state: a large state's restore is part of a restart's cost, and a job whose
state is still loading is not running yet."""

from __future__ import annotations

import pathlib
import threading
import time
from typing import Any

from barrier_runtime.api import Dataflow
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage import checkpoint_store, local
from barrier_runtime.testing import LocalExecutor, TestingSink, TestingSource

HELD = 0.3
"""Seconds the test holds the restore of the keyed step's state back."""


class RestoreGate(local.LocalObjectStore):
    """A local store whose reads from the ``count`` subtasks' threads wait for ``open``."""

    def __init__(self, root: pathlib.Path) -> None:
        super().__init__(root)
        self.entered = threading.Event()
        self.open = threading.Event()

    def get(self, key: str) -> bytes:
        if threading.current_thread().name.startswith("count#"):
            self.entered.set()
            assert self.open.wait(30), "the test never opened the gate"
        return super().get(key)


def _flow(records: list[dict[str, Any]], sink: TestingSink) -> Dataflow:
    flow = Dataflow("ready")
    flow.source("events", TestingSource(records, batch_size=10)).key_by(
        "by-k", lambda r: r["k"]
    ).reduce("count", lambda a, b: {**a, "n": a["n"] + b["n"]}).sink("out", sink)
    return flow


def test_startup_includes_the_subtasks_restore(tmp_path: pathlib.Path) -> None:
    gate = RestoreGate(tmp_path / "store")
    store = checkpoint_store.CheckpointStore(gate, "t/job")
    records = [{"k": i % 50, "n": 1} for i in range(400)]
    sink = TestingSink()  # one sink: the restored run commits what the first one staged
    gate.open.set()  # the first run writes checkpoints freely
    LocalExecutor(
        _flow(records, sink), parallelism=2, store=store, config=CheckpointConfig(interval=0.01)
    ).run()
    latest = max(m.checkpoint_id for m in store.list_completed())
    gate.open.clear()
    gate.entered.clear()
    restoring = LocalExecutor(
        _flow(records, sink), parallelism=2, store=store, config=CheckpointConfig(interval=0.01)
    )
    run = threading.Thread(target=restoring.run)
    run.start()
    assert gate.entered.wait(30), "no subtask restored state"
    time.sleep(HELD)  # the restore is held back this long (at least)
    gate.open.set()
    run.join(60)
    assert not run.is_alive()
    assert restoring.result.restored_from == [latest]
    assert restoring.result.startup_seconds[0] >= HELD
