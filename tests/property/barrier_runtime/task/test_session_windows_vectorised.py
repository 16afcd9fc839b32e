"""Vectorised session windows (``window_agg`` with ``Session``) against the per-record ``window``.

Random events (string or integer keys, event times with random disorder, some
far too late, integer values with nulls), random bounded out-of-orderness
watermarks (one after every source batch), gaps, allowed lateness and batch
sizes; one source partition at P = 1, so both steps meet the same watermarks
between the same batches. Both compute five named aggregates.

Properties:
* without allowed lateness, the results are identical: the same rows, values,
  ``update`` fields and key field, in the same order; the late side outputs hold
  the same records;
* with allowed lateness, ``window`` emits an update per late record and
  ``window_agg`` one per batch, so: every row ``window_agg`` emits is one
  ``window`` emits too (``update`` aside), each key's final sessions (the widest
  emitted windows) end with the same values, and the late records are the same.
"""

from __future__ import annotations

import collections
import tempfile
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from barrier_runtime.api import Dataflow
from barrier_runtime.api.watermarks import BoundedOutOfOrderness, monotonous
from barrier_runtime.api.windows import Session, count, max_of, mean_of, min_of, sum_of
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor, TestingSink, TestingSource

Row = dict[str, Any]


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 150))
    disorder = draw(st.integers(0, 400))
    times = [i * 20 + draw(st.integers(-disorder, 0)) for i in range(n)]
    for _ in range(draw(st.integers(0, 5))):  # far too late, at random places
        times.insert(draw(st.integers(0, len(times))), draw(st.integers(0, 300)))
    alphabet = st.sampled_from("abcd") if draw(st.booleans()) else st.integers(-2, 3)
    keys = draw(st.lists(alphabet, min_size=len(times), max_size=len(times)))
    values = st.one_of(st.none(), st.integers(-1_000, 1_000))
    vs = draw(st.lists(values, min_size=len(times), max_size=len(times)))
    events = [
        {"k": k, "ts": t, "v": v, "i": i}
        for i, (k, t, v) in enumerate(zip(keys, times, vs, strict=True))
    ]
    return {
        "events": events,
        "gap": draw(st.integers(1, 300)),
        "bound": draw(st.integers(0, 300)),
        "lateness": draw(st.sampled_from([0, 0, 1, 50, 400])),
        "batch": draw(st.integers(1, 15)),
    }


def run(s: dict[str, Any], vectorised: bool) -> tuple[list[Row], list[Row]]:
    """The window results and the late records of one run."""
    flow = Dataflow("sessions")
    bound = s["bound"]
    source = flow.source(
        "src",
        TestingSource(s["events"], batch_size=s["batch"]),
        timestamps="ts",
        watermarks=monotonous() if bound == 0 else BoundedOutOfOrderness(bound),
    )
    keyed = source.key_by("by-k", "k")
    named = {
        "n": count(),
        "total": sum_of("v"),
        "low": min_of("v"),
        "high": max_of("v"),
        "avg": mean_of("v"),
    }
    step = keyed.window_agg if vectorised else keyed.window
    windows = step("w", Session(s["gap"]), aggregate=named, allowed_lateness_ms=s["lateness"])
    out, late = TestingSink(), TestingSink()
    windows.sink("out", out)
    windows.late("late").sink("late-out", late)
    with tempfile.TemporaryDirectory() as root:
        store = CheckpointStore(open_object_store(root), "t/sessions")
        LocalExecutor(flow, parallelism=1, store=store, config=CheckpointConfig(interval=1e9)).run()
    return list(out.output), list(late.output)


def final_sessions(rows: list[Row]) -> dict[tuple[Any, int, int], Row]:
    """Per key, the last row of each widest window emitted (the sessions as they ended)."""
    last = {(r["k"], r["window_start"], r["window_end"]): r for r in rows}
    widest = {
        (k, s, e): r
        for (k, s, e), r in last.items()
        if not any(k2 == k and s2 <= s and e <= e2 and (s2, e2) != (s, e) for k2, s2, e2 in last)
    }
    return {slot: {f: v for f, v in r.items() if f != "update"} for slot, r in widest.items()}


def without_update(rows: list[Row]) -> set[tuple[Any, ...]]:
    return {tuple((f, v) for f, v in r.items() if f != "update") for r in rows}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_vectorised_sessions_equal_per_record_sessions(s: dict[str, Any]) -> None:
    per_record, per_record_late = run(s, vectorised=False)
    vectorised, vectorised_late = run(s, vectorised=True)
    late_ids = collections.Counter(r["i"] for r in vectorised_late)
    assert late_ids == collections.Counter(r["i"] for r in per_record_late)
    if s["lateness"] == 0:
        assert vectorised == per_record
        assert all(
            list(r)
            == ["k", "window_start", "window_end", "n", "total", "low", "high", "avg", "update"]
            for r in vectorised
        )
    else:
        assert without_update(vectorised) <= without_update(per_record)
        assert final_sessions(vectorised) == final_sessions(per_record)
