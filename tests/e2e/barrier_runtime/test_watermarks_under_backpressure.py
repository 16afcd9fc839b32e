"""Watermarks that arrive while a step waits for downstream capacity still reach its timers.

A back-pressured subtask keeps reading *markers* (barriers, watermarks, end of
partition) so that they are never stuck behind data it cannot move. The new
watermark such a marker makes at the step's valve must reach the step's
operators like any other. Before the fix it waited for the next marker read
outside back-pressure, and when the last ones — the final watermark and the
end of input — came in while the step waited, the step finished without
firing its last timers (found by the Nexmark q5 crash runs: the windows that
fire at end of input went missing).

The job: a keyed ``process`` step echoes every record (so its output is full
behind a slow keyed step when its input ends) and sets one event-time timer per key
far beyond the input, which only the final watermark reaches; its ``done``
record must come out for every key, after all of that key's records.
"""

from __future__ import annotations

import pathlib
import time
from collections.abc import Iterable
from typing import Any

from barrier_runtime.api import Dataflow
from barrier_runtime.api.watermarks import BoundedOutOfOrderness
from barrier_runtime.connectors.generator import GeneratorSource
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor, TestingSink

KEYS, EVENTS_PER_KEY = 10, 100
FAR = 10**12
"""A timer time beyond every event: only the final watermark reaches it."""

Out = tuple[Any, Iterable[dict[str, Any]]]


def event_time(record: dict[str, Any]) -> int:
    return int(record["seq"]) * 100


def echo(state: Any, record: dict[str, Any], ctx: Any) -> Out:
    ctx.register_event_time_timer(FAR)
    return (state or 0) + 1, [{"key": record["key"], "seq": record["seq"], "done": False}]


def done(state: Any, timer: Any, ctx: Any) -> Out:
    return state, [{"key": ctx.key, "seq": state, "done": True}]


def slowly(state: Any, record: dict[str, Any], ctx: Any) -> Out:
    time.sleep(0.002)
    return state, [record]


def flow(sink: TestingSink) -> Dataflow:
    flow = Dataflow("backpressured-timers")
    events = flow.source(
        "events",
        GeneratorSource(keys=KEYS, events_per_key=EVENTS_PER_KEY, partitions=2, batch_size=10),
        timestamps=event_time,
        watermarks=BoundedOutOfOrderness(0),
    )
    echoed = events.key_by("by-key", "key").process("echo", echo, done)
    echoed.key_by("by-seq", "seq").process("slow", slowly).sink("out", sink)
    return flow


def test_the_timers_the_final_watermark_fires_are_not_lost(tmp_path: pathlib.Path) -> None:
    sink = TestingSink()
    store = CheckpointStore(open_object_store(str(tmp_path)), "default/backpressured")
    result = LocalExecutor(
        flow(sink),
        parallelism=2,
        store=store,
        config=CheckpointConfig(interval=0.05),
        channel_capacity=1,
    ).run()
    assert result.attempts == 1
    echoed = [r for r in sink.output if not r["done"]]
    assert len(echoed) == KEYS * EVENTS_PER_KEY
    finals = {r["key"]: r["seq"] for r in sink.output if r["done"]}
    assert finals == {f"k{k}": EVENTS_PER_KEY for k in range(KEYS)}
