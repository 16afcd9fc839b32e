"""Keyed process functions with timers, in-process: event-time order, processing time."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from typing import Any

from barrier_runtime.api import Dataflow, sources
from barrier_runtime.api.watermarks import BoundedOutOfOrderness
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor, TestingSink, TestingSource


def run(flow: Dataflow) -> None:
    store = CheckpointStore(open_object_store(tempfile.mkdtemp()), "t/p")
    LocalExecutor(flow, parallelism=1, store=store, config=CheckpointConfig(interval=1e9)).run()


def count_then_flush(state: Any, record: dict[str, Any], ctx: Any) -> tuple[Any, list[Any]]:
    if state is None:
        ctx.register_event_time_timer(ctx.timestamp + 1_000)
        ctx.register_event_time_timer(ctx.timestamp + 5_000)
        ctx.delete_event_time_timer(ctx.timestamp + 5_000)  # never fires
    return (state or 0) + 1, []


def flush(state: Any, timer: Any, ctx: Any) -> tuple[Any, list[Any]]:
    return None, [{"key": ctx.key, "n": state, "at": timer.time, "wm": ctx.watermark}]


def test_event_time_timers_fire_in_time_then_key_order_before_the_watermark_moves_on() -> None:
    events = [
        {"k": "b", "ts": 0},
        {"k": "a", "ts": 0},
        {"k": "a", "ts": 500},
        {"k": "c", "ts": 400},
        {"k": "b", "ts": 2_500},  # counted, then watermark 2499: a, b fire at 1000, c at 1400
        {"k": "b", "ts": 2_600},  # a new round for b: fires at 3600, at the end of input
    ]
    out = TestingSink()
    flow = Dataflow("flush")
    source = flow.source(
        "in", TestingSource(events), timestamps="ts", watermarks=BoundedOutOfOrderness(0)
    )
    source.key_by("by", "k").process("p", count_then_flush, flush, timestamps="ts").sink("out", out)
    run(flow)
    assert [(r["key"], r["n"], r["at"]) for r in out.output] == [
        ("a", 2, 1_000),
        ("b", 2, 1_000),
        ("c", 1, 1_400),
        ("b", 1, 3_600),
    ]
    assert out.output[0]["wm"] == 2_499


class _OneThenWait(sources.Source):
    def partitions(self) -> Sequence[str]:
        return ["p"]

    def open(self, partition: str, resume_from: Any) -> sources.SourcePartition:
        return _Partition()


class _Partition(sources.SourcePartition):
    def __init__(self) -> None:
        self.started: float | None = None

    def next_batch(self) -> list[dict[str, Any]] | None:
        if self.started is None:
            self.started = time.monotonic()
            return [{"k": "a"}]
        return [] if time.monotonic() - self.started < 1.0 else None

    def snapshot(self) -> Any:
        return self.started is not None


def test_processing_time_timers_fire_while_input_is_quiet() -> None:
    def arm(state: Any, record: Any, ctx: Any) -> tuple[Any, list[Any]]:
        ctx.register_processing_time_timer(ctx.processing_time + 100)
        return ctx.processing_time, []

    def ring(state: Any, timer: Any, ctx: Any) -> tuple[Any, list[Any]]:
        return None, [{"key": ctx.key, "late_ms": ctx.processing_time - timer.time, "armed": state}]

    out = TestingSink()
    flow = Dataflow("ring")
    flow.source("in", _OneThenWait()).key_by("by", "k").process("p", arm, ring).sink("out", out)
    run(flow)
    (rang,) = out.output
    assert rang["key"] == "a" and 0 <= rang["late_ms"] < 500
