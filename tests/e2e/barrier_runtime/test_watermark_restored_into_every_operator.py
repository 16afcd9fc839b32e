"""After a restore, every event-time step resumes at the restored watermark.

A record that was late before a failure must be late after it, or the restored
run publishes what a failure-free run drops. The chain hands the restored
watermark to its operators; it used to reach only the per-record window and
``process`` steps, so the vectorised window (``window_agg``) restarted at the
lowest watermark and counted a late record into a window it had already fired
and dropped — publishing that window a second time.

The job (P = 1): records in the window [0, 1 s), one at 2.5 s that moves the
watermark past it (the window fires), a pause until a checkpoint covers
that, a crash, then a late record at 0.5 s. The failure-free run drops the
late record; the restored run must too. The same with vectorised session
windows (1 s gap): the session [100, 1300) fires, the record at 0.5 s is late.
"""

from __future__ import annotations

import pathlib
from collections.abc import Sequence
from typing import Any

import pytest

from barrier_runtime.api import Dataflow, sources
from barrier_runtime.api.watermarks import BoundedOutOfOrderness
from barrier_runtime.api.windows import Session, Tumbling, count
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor, TestingSink

ON_TIME = [{"key": "a", "ts": t} for t in (100, 200, 300)]
PAST_THE_WINDOW = {"key": "a", "ts": 2_500}
LATE = {"key": "a", "ts": 500}
CHECKPOINTED = 4
"""Items read before the pause: the crash comes once a checkpoint covers them."""


class PausingSource(sources.Source):
    """The items in order, one per batch; after item ``CHECKPOINTED`` it waits for a
    completed checkpoint that covers it, then (on the first attempt only) crashes."""

    def __init__(self, store: CheckpointStore, crash: bool) -> None:
        self.store, self.crash = store, crash
        self.crashed = False

    def partitions(self) -> Sequence[str]:
        return ["items"]

    def open(self, partition: str, resume_from: sources.Position | None) -> sources.SourcePartition:
        return _Partition(self, int(resume_from or 0))


class _Partition(sources.SourcePartition):
    ITEMS = [*ON_TIME, PAST_THE_WINDOW, LATE, {"key": "a", "ts": 2_600}]

    def __init__(self, source: PausingSource, position: int) -> None:
        self._source, self._next = source, position

    def next_batch(self) -> Sequence[dict[str, Any]] | None:
        if self._next >= len(self.ITEMS):
            return None
        if self._next == CHECKPOINTED and self._source.crash and not self._source.crashed:
            if not self._covered():
                return []
            self._source.crashed = True
            raise RuntimeError("crash after the checkpoint that follows the fired window")
        self._next += 1
        return [self.ITEMS[self._next - 1]]

    def _covered(self) -> bool:
        return any(
            int(m.source_positions.get("events", {}).get("items", 0)) >= CHECKPOINTED
            for m in self._source.store.list_completed()
        )

    def snapshot(self) -> sources.Position:
        return self._next


def run(tmp_path: pathlib.Path, *, kind: str, crash: bool) -> tuple[list[Any], int]:
    store = CheckpointStore(open_object_store(str(tmp_path)), "default/late")
    sink = TestingSink()
    flow = Dataflow("late-after-restore")
    keyed = flow.source(
        "events",
        PausingSource(store, crash),
        timestamps="ts",
        watermarks=BoundedOutOfOrderness(0),
    ).key_by("by-key", "key")
    if kind == "window_agg-session":
        counts = keyed.window_agg(
            "counts", Session(1_000), timestamps="ts", how="count", output="n"
        )
    elif kind == "window_agg":
        counts = keyed.window_agg(
            "counts", Tumbling(1_000), timestamps="ts", how="count", output="n"
        )
    else:
        counts = keyed.window(
            "counts", Tumbling(1_000), timestamps="ts", aggregate=count(), output="n"
        )
    counts.sink("out", sink)
    result = LocalExecutor(
        flow, parallelism=1, store=store, config=CheckpointConfig(interval=0.02)
    ).run()
    return sorted((r["window_start"], r["n"]) for r in sink.output), result.restarts


@pytest.mark.parametrize(
    ("kind", "clean"),
    [
        ("window", [(0, 3), (2_000, 2)]),
        ("window_agg", [(0, 3), (2_000, 2)]),
        ("window_agg-session", [(100, 3), (2_500, 2)]),
    ],
)
def test_a_record_late_before_the_failure_is_late_after_it(
    tmp_path: pathlib.Path, kind: str, clean: list[tuple[int, int]]
) -> None:
    expected, _ = run(tmp_path / "clean", kind=kind, crash=False)
    assert expected == clean, "the failure-free run drops the late record"
    got, restarts = run(tmp_path / "crash", kind=kind, crash=True)
    assert restarts == 1
    assert got == expected
