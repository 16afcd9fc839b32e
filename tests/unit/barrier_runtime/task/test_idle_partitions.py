"""Idleness: a silent source partition holds windows back, unless the strategy marks it idle.

No wall-clock bound decides an outcome: each test asks whether a window had fired
when the silent partition ended (it ends when a window fires, or after its patience).
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Sequence
from typing import Any

from waiting import wait_until

from barrier_runtime.api import Dataflow, sinks, sources
from barrier_runtime.api.watermarks import BoundedOutOfOrderness, WatermarkStrategy
from barrier_runtime.api.windows import Tumbling, count
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor

PATIENCE = 3.0
WATCH_TIMEOUT = 60.0


class OneBusyOneSilent(sources.Source):
    """``busy`` keeps emitting, its event time the milliseconds since it opened; ``silent``
    emits nothing. Both end once ``fired`` is set (by the first window result reaching
    the sink, or by the test), or after ``patience`` seconds; ``ended`` records, per
    partition, whether ``fired`` was set when it ended."""

    def __init__(
        self, fired: threading.Event, ended: dict[str, bool], patience: float = PATIENCE
    ) -> None:
        self.fired, self.ended, self.patience = fired, ended, patience

    def partitions(self) -> Sequence[str]:
        return ["busy", "silent"]

    def open(self, partition: str, resume_from: Any) -> sources.SourcePartition:
        kind = _Busy if partition == "busy" else _Silent
        return kind(partition, self.fired, self.ended, self.patience)


class _Silent(sources.SourcePartition):
    def __init__(
        self, name: str, fired: threading.Event, ended: dict[str, bool], patience: float
    ) -> None:
        self.name, self.fired, self.ended, self.patience = name, fired, ended, patience
        self.started = time.monotonic()

    def next_batch(self) -> list[dict[str, Any]] | None:
        if self.fired.is_set() or time.monotonic() - self.started > self.patience:
            self.ended.setdefault(self.name, self.fired.is_set())
            return None
        return []

    def snapshot(self) -> Any:
        return None


class _Busy(_Silent):
    def next_batch(self) -> list[dict[str, Any]] | None:
        if super().next_batch() is None:
            return None
        time.sleep(0.01)
        return [{"k": "a", "ts": int((time.monotonic() - self.started) * 1000)}]


class FiredSink(sinks.Sink):
    def __init__(self, fired: threading.Event) -> None:
        self.fired = fired

    def writer(self, step_id: str, subtask: int, parallelism: int) -> sinks.SinkWriter:
        return _FiredWriter(self.fired)

    def commit(self, transaction: sinks.Transaction) -> None:
        """Nothing staged."""


class _FiredWriter(sinks.SinkWriter):
    def __init__(self, fired: threading.Event) -> None:
        self.fired = fired

    def write(self, records: Sequence[dict[str, Any]]) -> None:
        if records:
            self.fired.set()

    def pre_commit(self, checkpoint_id: int) -> sinks.Transaction | None:
        return None


def fired_before_the_silent_partition_ended(strategy: WatermarkStrategy, patience: float) -> bool:
    """Run the job; whether a window had fired when the silent partition ended."""
    fired, ended = threading.Event(), {}
    flow = Dataflow("idle")
    events = flow.source(
        "src", OneBusyOneSilent(fired, ended, patience), timestamps="ts", watermarks=strategy
    )
    windows = events.key_by("by", "k").window(
        "w", Tumbling(500), timestamps="ts", aggregate=count(), output="n"
    )
    windows.sink("out", FiredSink(fired))
    store = CheckpointStore(open_object_store(tempfile.mkdtemp()), "t/idle")
    LocalExecutor(flow, parallelism=1, store=store, config=CheckpointConfig(interval=1e9)).run()
    assert fired.is_set()  # at the latest at the end of input
    return ended["silent"]


def test_windows_fire_after_the_idleness_timeout_while_a_partition_stays_silent() -> None:
    """The silent partition would wait a minute: a window fires long before, while it is open."""
    strategy = BoundedOutOfOrderness(0).with_idleness(0.2)
    assert fired_before_the_silent_partition_ended(strategy, patience=WATCH_TIMEOUT)


def test_without_an_idleness_timeout_the_silent_partition_holds_every_window_back() -> None:
    """Nothing fires while it is open, however long that is; the end of input fires them."""
    assert not fired_before_the_silent_partition_ended(BoundedOutOfOrderness(0), PATIENCE)


def test_the_running_job_reports_each_steps_watermark() -> None:
    """``runtime_metrics()`` (what ``/metrics`` serves) shows the live watermark per step.

    The source's and the window's watermarks are recorded by two subtasks (the keyed
    edge is a channel between threads), the window's after the marker crossed it: the
    job runs until one reading shows both (its sources end when the test says so),
    so no reading in between, nor the job ending first, can decide the outcome.
    """
    observed, ended = threading.Event(), {}
    flow = Dataflow("metrics")
    events = flow.source(
        "src",
        OneBusyOneSilent(observed, ended, patience=WATCH_TIMEOUT),
        timestamps="ts",
        watermarks=BoundedOutOfOrderness(0).with_idleness(0.2),
    )
    events.key_by("by", "k").window(
        "w", Tumbling(500), timestamps="ts", aggregate=count(), output="n"
    ).sink("out", FiredSink(threading.Event()))
    store = CheckpointStore(open_object_store(tempfile.mkdtemp()), "t/metrics")
    executor = LocalExecutor(
        flow, parallelism=1, store=store, config=CheckpointConfig(interval=1e9)
    )
    seen: list[dict[str, int]] = []

    def both_steps() -> dict[str, int] | None:
        marks = executor.runtime_metrics().watermarks
        return marks if marks.get("src", 0) > 0 and "w" in marks else None

    def watch() -> None:
        try:
            seen.append(wait_until(both_steps, WATCH_TIMEOUT, "src's and w's watermarks"))
        finally:
            observed.set()

    watcher = threading.Thread(target=watch)
    watcher.start()
    executor.run()
    watcher.join()
    assert seen, "the job ended before its metrics showed both steps' watermarks"
    assert seen[0]["src"] > 0 and "w" in seen[0]
