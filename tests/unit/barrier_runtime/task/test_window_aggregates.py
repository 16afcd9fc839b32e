"""Several named aggregates in one window step, the key named after its column, and event
time declared once at the source (issue 27: windows that read like Spark's).

``window`` folds the named aggregates record by record, ``window_agg`` computes the
built-in ones on whole Arrow batches: both give the same records.
"""

from __future__ import annotations

import tempfile
from typing import Any

import pytest

from barrier_runtime.api import Dataflow, InvalidDataflowError
from barrier_runtime.api.watermarks import BoundedOutOfOrderness
from barrier_runtime.api.windows import (
    AggregateFunction,
    Sliding,
    Tumbling,
    count,
    max_of,
    mean_of,
    min_of,
    sum_of,
)
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor, TestingSink, TestingSource

EVENTS = [
    {"user": f"u{i % 4}", "ts": i * 37 % 5_000, "v": None if i % 11 == 0 else i % 13, "p": i / 8}
    for i in range(400)
]


def stats() -> dict[str, AggregateFunction[Any]]:
    return {
        "clicks": count(),
        "spend": sum_of("v"),
        "low": min_of("v"),
        "high": max_of("v"),
        "avg_price": mean_of("p"),
    }


def run(flow: Dataflow, out: TestingSink, parallelism: int = 2) -> list[dict[str, Any]]:
    store = CheckpointStore(open_object_store(tempfile.mkdtemp()), "t/aggs")
    LocalExecutor(
        flow, parallelism=parallelism, store=store, config=CheckpointConfig(interval=1e9)
    ).run()
    return sorted(out.output, key=lambda r: (r.get("user", r.get("key")), r["window_start"]))


def windows_of(vectorised: bool, assigner: Any = None) -> list[dict[str, Any]]:
    flow, out = Dataflow("aggs"), TestingSink()
    events = flow.source(
        "events",
        TestingSource(EVENTS, batch_size=40),
        timestamps="ts",
        watermarks=BoundedOutOfOrderness(5_000),
    )
    keyed = events.key_by("by-user", "user")
    step = keyed.window_agg if vectorised else keyed.window
    step("stats", assigner or Tumbling(1_000), aggregate=stats()).sink("out", out)
    return run(flow, out)


def reference(size: int = 1_000) -> list[dict[str, Any]]:
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for e in EVENTS:
        groups.setdefault((e["user"], e["ts"] // size * size), []).append(e)
    rows = []
    for (user, start), records in sorted(groups.items()):
        values = [r["v"] for r in records if r["v"] is not None]
        rows.append(
            {
                "user": user,
                "window_start": start,
                "window_end": start + size,
                "clicks": len(records),
                "spend": sum(values),
                "low": min(values, default=None),
                "high": max(values, default=None),
                "avg_price": sum(r["p"] for r in records) / len(records),
                "update": 0,
            }
        )
    return rows


@pytest.mark.parametrize("vectorised", [False, True], ids=["window", "window_agg"])
def test_named_aggregates_are_fields_of_one_result_keyed_by_the_key_column(
    vectorised: bool,
) -> None:
    got = windows_of(vectorised)
    assert [{**r, "avg_price": pytest.approx(r["avg_price"])} for r in reference()] == got


def test_the_vectorised_and_the_per_record_window_give_the_same_records_for_sliding_windows() -> (
    None
):
    per_record = windows_of(False, Sliding(1_000, 250))
    vectorised = windows_of(True, Sliding(1_000, 250))
    assert len(per_record) > len(reference())
    assert [{**r, "avg_price": pytest.approx(r["avg_price"])} for r in per_record] == vectorised


def test_a_window_step_reads_the_event_time_its_source_declared() -> None:
    """No ``timestamps=`` at the window: the source's (a column or a function) is used."""
    flow, out = Dataflow("carried"), TestingSink()
    events = flow.source(
        "events",
        TestingSource([{"user": "a", "t_s": 1}, {"user": "a", "t_s": 2}, {"user": "a", "t_s": 7}]),
        timestamps=lambda r: r["t_s"] * 1_000,
        watermarks=BoundedOutOfOrderness(0),
    )
    events.key_by("by-user", "user").window(
        "per-5s", Tumbling(5_000), aggregate={"n": count()}
    ).sink("out", out)
    got = run(flow, out, parallelism=1)
    assert [(r["user"], r["window_start"], r["n"]) for r in got] == [("a", 0, 2), ("a", 5_000, 1)]


def test_a_window_step_may_still_read_its_own_event_time() -> None:
    flow, out = Dataflow("override"), TestingSink()
    events = flow.source(
        "events",
        TestingSource([{"user": "a", "ts": 10, "later": 6_000}]),
        timestamps="ts",
        watermarks=BoundedOutOfOrderness(0),
    )
    events.key_by("by-user", "user").window_agg(
        "w", Tumbling(5_000), timestamps="later", aggregate={"n": count()}
    ).sink("out", out)
    assert [r["window_start"] for r in run(flow, out, parallelism=1)] == [5_000]


def test_the_single_aggregate_forms_keep_key_and_output() -> None:
    """Earlier pipelines read ``key`` and their ``output`` name: those forms are unchanged."""
    for vectorised in (False, True):
        flow, out = Dataflow("legacy"), TestingSink()
        events = flow.source(
            "events",
            TestingSource([{"user": "a", "ts": 1}]),
            timestamps="ts",
            watermarks=BoundedOutOfOrderness(0),
        )
        keyed = events.key_by("by-user", "user")
        if vectorised:
            windows = keyed.window_agg("w", Tumbling(10), how="count", output="n")
        else:
            windows = keyed.window("w", Tumbling(10), aggregate=count(), output="n")
        windows.sink("out", out)
        assert out.output == [] and run(flow, out, parallelism=1) == [
            {"key": "a", "window_start": 0, "window_end": 10, "n": 1, "update": 0}
        ]


def _keyed() -> Any:
    flow = Dataflow("bad")
    events = flow.source(
        "events", TestingSource([]), timestamps="ts", watermarks=BoundedOutOfOrderness(0)
    )
    return events.key_by("by-user", "user")


class _Custom(AggregateFunction[int]):
    def create(self) -> int:
        return 0

    def add(self, acc: int, record: dict[str, Any]) -> int:
        return acc + 1

    def merge(self, a: int, b: int) -> int:
        return a + b

    def result(self, acc: int) -> int:
        return acc


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda k: k.window_agg("w", Tumbling(10), aggregate={"n": _Custom()}),
            "'n' is not one: use window",
        ),
        (lambda k: k.window("w", Tumbling(10), aggregate={"user": count()}), "'user' is a field"),
        (lambda k: k.window("w", Tumbling(10), aggregate={"update": count()}), "'update' is a"),
        (lambda k: k.window("w", Tumbling(10), aggregate={}), "names no aggregate"),
        (
            lambda k: k.window("w", Tumbling(10), aggregate={"n": count()}, output="x"),
            "output= goes with a single aggregate",
        ),
        (
            lambda k: k.window_agg("w", Tumbling(10), aggregate={"n": count()}, how="count"),
            "not both",
        ),
    ],
)
def test_named_aggregates_are_checked_when_the_step_is_added(build: Any, message: str) -> None:
    with pytest.raises(InvalidDataflowError, match=message):
        build(_keyed())


def test_a_custom_aggregate_among_named_ones_folds_per_record() -> None:
    flow, out = Dataflow("custom"), TestingSink()
    events = flow.source(
        "events",
        TestingSource([{"user": "a", "ts": 1}, {"user": "a", "ts": 2}]),
        timestamps="ts",
        watermarks=BoundedOutOfOrderness(0),
    )
    events.key_by("by-user", "user").window(
        "w", Tumbling(10), aggregate={"mine": _Custom(), "n": count()}
    ).sink("out", out)
    assert [(r["mine"], r["n"]) for r in run(flow, out, parallelism=1)] == [(2, 2)]


def test_sources_declaring_different_event_times_need_the_step_to_say() -> None:
    flow = Dataflow("two")
    a = flow.source("a", TestingSource([]), timestamps="ts", watermarks=BoundedOutOfOrderness(0))
    b = flow.source("b", TestingSource([]), timestamps="t", watermarks=BoundedOutOfOrderness(0))
    merged = flow.merge("both", a, b).key_by("by-user", "user")
    with pytest.raises(InvalidDataflowError, match="different timestamps"):
        merged.window("w", Tumbling(10), aggregate={"n": count()})


def test_a_batch_whose_value_column_is_all_null_is_skipped_like_any_null() -> None:
    """Rows with only ``None`` values become an Arrow column of type null: no type to fill."""
    flow, out = Dataflow("nulls"), TestingSink()
    rows = [{"user": "a", "ts": 1, "v": None}, {"user": "a", "ts": 2, "v": 4}]
    events = flow.source(
        "events",
        TestingSource(rows, batch_size=1),
        timestamps="ts",
        watermarks=BoundedOutOfOrderness(0),
    )
    events.key_by("by-user", "user").window_agg(
        "w", Tumbling(10), timestamps="ts", how="sum", column="v", output="total"
    ).sink("out", out)
    assert [(r["total"], type(r["total"])) for r in run(flow, out, parallelism=1)] == [(4, int)]


def test_window_agg_over_a_source_timed_by_a_function_asks_for_a_column() -> None:
    flow = Dataflow("fn")
    events = flow.source(
        "events",
        TestingSource([]),
        timestamps=lambda r: r["t"] * 1_000,
        watermarks=BoundedOutOfOrderness(0),
    )
    with pytest.raises(InvalidDataflowError, match="the sources declare a function"):
        events.key_by("by-user", "user").window_agg("w", Tumbling(10), aggregate={"n": count()})
