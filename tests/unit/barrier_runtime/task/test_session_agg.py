"""``window_agg`` with session windows (issue 31): the operator on its own and in small jobs.

Snapshots are split by key group: a snapshot taken by one subtask restores into
two subtasks that split its key groups, and together they fire what it would
have. The restored watermark decides what is late and what has fired.
"""

from __future__ import annotations

import tempfile
from typing import Any

import pyarrow as pa

from barrier_runtime.api import Dataflow, steps
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api.watermarks import MAX_WATERMARK, BoundedOutOfOrderness
from barrier_runtime.api.windows import Session, count, max_of, mean_of, min_of, sum_of
from barrier_runtime.core.types import CheckpointConfig, CheckpointId
from barrier_runtime.state import key_groups
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.task.operators import base, session_agg
from barrier_runtime.testing import LocalExecutor, TestingSink, TestingSource

MAX_P = 128
EVENTS = [
    {"user": f"u{i % 7}", "ts": i * 53 % 9_000 + (i // 40) * 3_000, "v": i % 5, "p": i / 4}
    for i in range(600)
]


def session_step(lateness: int = 0) -> steps.WindowAggStep:
    flow = Dataflow("sessions")
    events = flow.source(
        "events", TestingSource([]), timestamps="ts", watermarks=BoundedOutOfOrderness(0)
    )
    events.key_by("by-user", "user").window_agg(
        "s",
        Session(100),
        aggregate={"n": count(), "total": sum_of("v")},
        allowed_lateness_ms=lateness,
    ).sink("out", TestingSink())
    (step,) = [s for s in flow.steps if isinstance(s, steps.WindowAggStep)]
    return step


class Recorder:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def __call__(self, batch: batch_mod.Batch) -> None:
        self.rows += list(batch.rows())


def operator(
    step: steps.WindowAggStep, key_groups: tuple[int, int] = (0, MAX_P - 1)
) -> tuple[session_agg.SessionAggOperator, Recorder, Recorder]:
    out, late = Recorder(), Recorder()
    return session_agg.SessionAggOperator(step, out, late, key_groups, MAX_P), out, late


def batch(rows: list[dict[str, Any]]) -> batch_mod.Batch:
    return batch_mod.Batch.from_arrow(pa.RecordBatch.from_pylist(rows))


def snapshot(op: session_agg.SessionAggOperator) -> bytes:
    builder = base.SnapshotBuilder(CheckpointId(1), 0)
    op.snapshot(builder)
    (blob,) = builder.blobs
    return blob.data


RECORDS = [{"user": f"u{i % 9}", "ts": 1_000 + i * 30 + (i % 4) * 10, "v": i} for i in range(90)]


def test_a_snapshot_restores_into_two_subtasks_that_split_its_key_groups() -> None:
    step = session_step()
    whole, whole_out, _ = operator(step)
    whole.process(batch(RECORDS[:60]), 0)
    whole.on_watermark(1_500)  # some sessions fire before the snapshot
    blob, fired_before = snapshot(whole), len(whole_out.rows)
    whole.process(batch(RECORDS[60:]), 0)
    whole.on_watermark(MAX_WATERMARK)

    rest = RECORDS[60:]
    groups = key_groups.key_groups_of(pa.array([r["user"] for r in rest]), MAX_P)
    split_out: list[dict[str, Any]] = []
    for lo, hi in ((0, 63), (64, MAX_P - 1)):
        part, out, _ = operator(step, (lo, hi))
        part.watermark_restored(1_500)
        part.restore([blob])
        part.process(batch([r for r, g in zip(rest, groups, strict=True) if lo <= g <= hi]), 0)
        part.on_watermark(MAX_WATERMARK)
        split_out += out.rows
    assert fired_before > 0 and split_out
    assert sorted(split_out, key=str) == sorted(whole_out.rows[fired_before:], key=str)


def test_the_restored_watermark_decides_what_is_late_and_what_fired() -> None:
    step = session_step()
    first, first_out, _ = operator(step)
    first.process(batch([{"user": "a", "ts": 0, "v": 1}, {"user": "b", "ts": 500, "v": 2}]), 0)
    first.on_watermark(200)  # a's session [0, 100) fires; b's [500, 600) stays open
    assert [r["user"] for r in first_out.rows] == ["a"]
    restored, out, late = operator(step)
    restored.watermark_restored(200)
    restored.restore([snapshot(first)])
    restored.process(batch([{"user": "a", "ts": 50, "v": 5}]), 0)  # [50, 150): late
    restored.on_watermark(MAX_WATERMARK)
    assert [r["user"] for r in late.rows] == ["a"]
    assert [(r["user"], r["window_start"], r["n"], r["update"]) for r in out.rows] == [
        ("b", 500, 1, 0)
    ]


def test_a_late_record_within_the_lateness_updates_its_session_once_per_batch() -> None:
    op, out, _ = operator(session_step(lateness=1_000))
    op.process(batch([{"user": "a", "ts": 0, "v": 1}]), 0)
    op.on_watermark(500)
    op.process(batch([{"user": "a", "ts": 60, "v": 2}, {"user": "a", "ts": 120, "v": 3}]), 0)
    got = [(r["window_start"], r["window_end"], r["n"], r["total"], r["update"]) for r in out.rows]
    assert got == [(0, 100, 1, 1, 0), (0, 220, 3, 6, 1)]


def run(flow: Dataflow, out: TestingSink, parallelism: int) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as root:
        store = CheckpointStore(open_object_store(root), "t/sessions")
        LocalExecutor(
            flow, parallelism=parallelism, store=store, config=CheckpointConfig(interval=0.05)
        ).run()
    return sorted(out.output, key=lambda r: (r["user"], r["window_start"]))


def sessions_of(vectorised: bool, parallelism: int, dictionary_keys: bool) -> list[dict[str, Any]]:
    flow, out = Dataflow("sessions"), TestingSink()
    events = flow.source(
        "events",
        TestingSource(EVENTS, batch_size=45),
        timestamps="ts",
        watermarks=BoundedOutOfOrderness(2_000),
    )
    if dictionary_keys:
        events = events.map_batches(
            "dict-keys",
            lambda b: b.set_column(0, "user", b.column("user").dictionary_encode()),
        )
    keyed = events.key_by("by-user", "user")
    step = keyed.window_agg if vectorised else keyed.window
    named = {"n": count(), "low": min_of("v"), "high": max_of("p"), "avg": mean_of("p")}
    step("visits", Session(250), aggregate=named).sink("out", out)
    return run(flow, out, parallelism)


def test_at_parallelism_two_with_checkpoints_the_results_are_those_of_window() -> None:
    want = sessions_of(vectorised=False, parallelism=2, dictionary_keys=False)
    assert len(want) > 20
    assert sessions_of(vectorised=True, parallelism=2, dictionary_keys=True) == want


def test_an_empty_batch_changes_nothing() -> None:
    op, out, late = operator(session_step())
    schema = pa.schema([("user", pa.string()), ("ts", pa.int64()), ("v", pa.int64())])
    empty = batch_mod.Batch.from_arrow(pa.RecordBatch.from_pylist([], schema=schema))
    op.process(empty, 0)
    op.process(batch([{"user": "a", "ts": 0, "v": 1}]), 0)
    op.process(empty, 0)
    op.on_watermark(MAX_WATERMARK)
    assert [(r["user"], r["n"]) for r in out.rows] == [("a", 1)] and not late.rows


def test_thousands_of_sessions_ending_and_starting_give_the_results_of_window() -> None:
    """Enough keys that the open-session table compacts dead rows many times."""
    events = [
        {
            "user": i * 7919 % 3_000 if i % 2 else 10_000 + i * 31 % 300,  # some sessions merge
            "ts": i * 3 + i * 37 % 11 * 100,
            "v": i % 17,
        }
        for i in range(12_000)
    ]

    def sessions(vectorised: bool) -> list[dict[str, Any]]:
        flow, out = Dataflow("many"), TestingSink()
        keyed = flow.source(
            "events",
            TestingSource(events, batch_size=500),
            timestamps="ts",
            watermarks=BoundedOutOfOrderness(1_000),
        ).key_by("by-user", "user")
        step = keyed.window_agg if vectorised else keyed.window
        step("s", Session(2_000), aggregate={"n": count(), "total": sum_of("v")}).sink("out", out)
        return run(flow, out, 1)

    want = sessions(vectorised=False)
    assert len(want) > 6_000 and max(r["n"] for r in want) > 2
    assert sessions(vectorised=True) == want
