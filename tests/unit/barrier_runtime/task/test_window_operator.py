"""Window steps in-process: the lateness boundary, updates within the allowed lateness,
session merging and whole-window functions, end of input."""

from __future__ import annotations

import tempfile
from typing import Any

from barrier_runtime.api import Dataflow
from barrier_runtime.api.watermarks import BoundedOutOfOrderness
from barrier_runtime.api.windows import Session, Tumbling, WindowAssigner, count
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor, TestingSink, TestingSource


def run(
    events: list[dict[str, Any]], assigner: WindowAssigner, *, bound: int = 0, **window: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One record per batch; the watermark after each is the newest time - ``bound`` - 1."""
    flow = Dataflow("w")
    out, late = TestingSink(), TestingSink()
    source = flow.source(
        "src", TestingSource(events), timestamps="ts", watermarks=BoundedOutOfOrderness(bound)
    )
    windows = source.key_by("by", "k").window("w", assigner, timestamps="ts", **window)
    windows.sink("out", out)
    windows.late("late").sink("late-out", late)
    store = CheckpointStore(open_object_store(tempfile.mkdtemp()), "t/w")
    LocalExecutor(flow, parallelism=1, store=store, config=CheckpointConfig(interval=1e9)).run()
    return out.output, late.output


def test_a_record_at_the_watermark_is_late_and_the_next_window_is_not() -> None:
    # one record per batch: the watermark after ts=2000 is 1999
    events = [{"k": "a", "ts": 2000}, {"k": "a", "ts": 1999}, {"k": "a", "ts": 2000}]
    out, late = run(events, Tumbling(1000), aggregate=count(), output="n")
    assert [(r["window_start"], r["n"], r["update"]) for r in out] == [(2000, 2, 0)]
    assert late == [{"k": "a", "ts": 1999}]


def test_records_within_the_allowed_lateness_update_the_window_once_each() -> None:
    events = [
        {"k": "a", "ts": 100},
        {"k": "a", "ts": 1500},  # watermark 1499: [0, 1000) fires with 1
        {"k": "a", "ts": 900},  # late by 599 < 1000: an update, n = 2
        {"k": "a", "ts": 2100},  # watermark 2099 >= 999 + 1000: [0, 1000) is purged
        {"k": "a", "ts": 800},  # beyond the lateness: side output
    ]
    out, late = run(events, Tumbling(1000), aggregate=count(), output="n", allowed_lateness_ms=1000)
    first = [(r["n"], r["update"]) for r in out if r["window_start"] == 0]
    assert first == [(1, 0), (2, 1)]
    assert late == [{"k": "a", "ts": 800}]


def test_sessions_merge_and_a_whole_window_function_sees_every_record() -> None:
    events = [
        {"k": "a", "ts": 0},  # [0, 200)
        {"k": "a", "ts": 300},  # [300, 500)
        {"k": "b", "ts": 350},
        {"k": "a", "ts": 150},  # [150, 350) joins both: [0, 500)
        {"k": "a", "ts": 600},  # [600, 800), apart
        {"k": "a", "ts": 450},  # [450, 650) joins [0, 500) and [600, 800): [0, 800)
    ]

    def describe(key: Any, window: Any, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {
                "key": key,
                "start": window.start,
                "end": window.end,
                "ts": sorted(r["ts"] for r in records),
            }
        ]

    out, late = run(events, Session(200), bound=10_000, process=describe)
    got = sorted((r["key"], r["start"], r["end"], tuple(r["ts"])) for r in out)
    assert got == [("a", 0, 800, (0, 150, 300, 450, 600)), ("b", 350, 550, (350,))]
    assert late == []


def test_vectorised_sum_min_max_mean_match_the_per_record_aggregates() -> None:
    from barrier_runtime.api.windows import max_of, mean_of, min_of, sum_of

    events = [{"k": k, "ts": t, "v": (t * 7) % 13} for t in range(0, 3000, 40) for k in "ab"]
    folds = {"sum": sum_of("v"), "min": min_of("v"), "max": max_of("v"), "mean": mean_of("v")}
    for how, fold in folds.items():
        flow = Dataflow("w")
        out_v, out_r = TestingSink(), TestingSink()
        keyed = flow.source(
            "src",
            TestingSource(events, batch_size=9),
            timestamps="ts",
            watermarks=BoundedOutOfOrderness(0),
        ).key_by("by", "k")
        keyed.window_agg(
            "vec",
            Tumbling(500),
            timestamps="ts",
            how=how,
            column="v",
            output="x",  # type: ignore[arg-type]
        ).sink("out-v", out_v)
        keyed.window("rec", Tumbling(500), timestamps="ts", aggregate=fold, output="x").sink(
            "out-r", out_r
        )
        store = CheckpointStore(open_object_store(tempfile.mkdtemp()), "t/agg")
        LocalExecutor(flow, parallelism=1, store=store, config=CheckpointConfig(interval=1e9)).run()
        vec = {(r["key"], r["window_start"]): r["x"] for r in out_v.output}
        rec = {(r["key"], r["window_start"]): r["x"] for r in out_r.output}
        assert vec == rec and len(vec) == 12, how


def test_late_records_without_a_late_stream_are_dropped_and_counted() -> None:
    events = [{"k": "a", "ts": 2000}, {"k": "a", "ts": 10}, {"k": "b", "ts": 20}]
    flow = Dataflow("w")
    source = flow.source(
        "src", TestingSource(events), timestamps="ts", watermarks=BoundedOutOfOrderness(0)
    )
    source.key_by("by", "k").window(
        "w", Tumbling(1000), timestamps="ts", aggregate=count(), output="n"
    ).sink("out", TestingSink())
    store = CheckpointStore(open_object_store(tempfile.mkdtemp()), "t/late")
    executor = LocalExecutor(
        flow, parallelism=1, store=store, config=CheckpointConfig(interval=1e9)
    )
    executor.run()
    assert executor.runtime_metrics().late_dropped == {"w": 2}
