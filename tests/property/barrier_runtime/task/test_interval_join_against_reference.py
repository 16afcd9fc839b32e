"""The interval join against a nested-loop reference, and exactly once through crashes.

Two sources of records ``{"k", "ts", "id"}`` with random disorder no larger than
the watermark bound, so nothing is late. The reference joins every left and right
record of a key with ``l + lower <= r <= l + upper``. The streamed pairs must be
exactly those, each once, at P = 1 and P = 2. The same job, through crashes at every
life-cycle point, publishes the same pairs exactly once.
"""

from __future__ import annotations

import collections
import pathlib
import tempfile
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from barrier_runtime.api import Dataflow, sinks
from barrier_runtime.api.watermarks import BoundedOutOfOrderness
from barrier_runtime.connectors.files import FileSink
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
)

BOUND = 300


@st.composite
def sides(draw: st.DrawFn, prefix: str) -> list[dict[str, Any]]:
    n = draw(st.integers(0, 60))
    return [
        {
            "k": draw(st.sampled_from("ab")),
            "ts": i * 40 - draw(st.integers(0, BOUND)),
            "id": f"{prefix}{i}",
        }
        for i in range(n)
    ]


def joined(
    left: list[dict[str, Any]],
    right: list[dict[str, Any]],
    lower: int,
    upper: int,
    sink: sinks.Sink,
    *,
    parallelism: int,
    store: CheckpointStore,
    **kw: Any,
) -> Any:
    flow = Dataflow("join")
    wm = BoundedOutOfOrderness(BOUND)
    ls = flow.source("left", TestingSource(left, batch_size=7), timestamps="ts", watermarks=wm)
    rs = flow.source("right", TestingSource(right, batch_size=5), timestamps="ts", watermarks=wm)
    ls.key_by("by-l", "k").interval_join(
        "join",
        rs.key_by("by-r", "k"),
        lower_ms=lower,
        upper_ms=upper,
        timestamps="ts",
        fn=lambda a, b: {"l": a["id"], "r": b["id"], "k": a["k"]},
    ).sink("out", sink)
    return LocalExecutor(flow, parallelism=parallelism, store=store, **kw).run()


def reference(left: list[Any], right: list[Any], lower: int, upper: int) -> collections.Counter:
    return collections.Counter(
        (a["id"], b["id"])
        for a in left
        for b in right
        if a["k"] == b["k"] and a["ts"] + lower <= b["ts"] <= a["ts"] + upper
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sides("l"), sides("r"), st.integers(-500, 500), st.integers(0, 800), st.sampled_from([1, 2]))
def test_every_matching_pair_once(
    left: list[Any], right: list[Any], lower: int, width: int, parallelism: int
) -> None:
    upper = lower + width
    out = TestingSink()
    store = CheckpointStore(open_object_store(tempfile.mkdtemp()), "t/join")
    joined(
        left,
        right,
        lower,
        upper,
        out,
        parallelism=parallelism,
        store=store,
        config=CheckpointConfig(interval=1e9),
    )
    got = collections.Counter((r["l"], r["r"]) for r in out.output)
    assert got == reference(left, right, lower, upper)


def test_pairs_exactly_once_through_crashes(tmp_path: pathlib.Path) -> None:
    left = [
        {"k": f"k{i % 5}", "ts": i * 10 - (i * 37 % 9) * 20, "id": f"l{i}"} for i in range(3000)
    ]
    right = [
        {"k": f"k{i % 5}", "ts": i * 10 - (i * 53 % 7) * 25, "id": f"r{i}"} for i in range(3000)
    ]
    store = CheckpointStore(open_object_store(str(tmp_path / "store")), "t/join")
    crashes = [
        Crash(FaultPoint.PROCESSING, task="join", after_records=1_000),
        Crash(FaultPoint.SNAPSHOT, task="join", checkpoint_id=3),
        Crash(FaultPoint.UPLOAD, checkpoint_id=5),
        Crash(FaultPoint.RESTORE, attempt=3),
        Crash(FaultPoint.COMMIT, checkpoint_id=7),
    ]
    result = joined(
        left,
        right,
        -50,
        100,
        FileSink(str(tmp_path / "out")),
        parallelism=2,
        store=store,
        config=CheckpointConfig(interval=0.01),
        fault_injector=FaultInjector(crashes),
        max_restarts=10,
    )
    got = collections.Counter(
        (r["l"], r["r"]) for r in FileSink(str(tmp_path / "out")).read_committed()
    )
    want = reference(left, right, -50, 100)
    assert sum((want - got).values()) == 0, "lost"
    assert sum((got - want).values()) == 0, "duplicated"
    assert result.restarts >= 3, result.failures
