"""Streamed window results against a reference computed with NumPy and pyarrow.

Random events (keys, event times with random disorder, some far too late),
random watermark strategies (bounded out-of-orderness with a random bound,
monotonous, or a custom generator that rounds the watermark down), allowed
lateness, tumbling, sliding and session windows, and source batch sizes. One
source partition at P = 1, so the watermark a record meets is exactly the one
emitted after the batches before it: ``max(event time so far) - bound - 1``
(rounded down by the custom strategy). The reference works per
(record, window) pair. A pair counts when the window is still open, which
means ``max_timestamp + lateness > watermark``. A record with no open window
is late. Then pyarrow counts the pairs per (key, window).

Properties: the last result streamed for each window equals the reference;
late records appear in the side output exactly once each; a window fires
once when the watermark passes it and once more per record added after that
(within the allowed lateness), never otherwise.
"""

from __future__ import annotations

import collections
import functools
import tempfile

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from barrier_runtime.api import Dataflow, KeyedStream
from barrier_runtime.api.watermarks import (
    MAX_WATERMARK,
    MIN_WATERMARK,
    BoundedOutOfOrderness,
    CustomWatermarks,
    WatermarkGenerator,
    WatermarkStrategy,
    monotonous,
)
from barrier_runtime.api.windows import (
    Session,
    Sliding,
    Tumbling,
    WindowAssigner,
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


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, object]:
    n = draw(st.integers(1, 120))
    disorder = draw(st.integers(0, 400))
    times = [i * 20 + draw(st.integers(-disorder, 0)) for i in range(n)]
    for _ in range(draw(st.integers(0, 5))):  # far too late, at random places
        times.insert(draw(st.integers(0, len(times))), draw(st.integers(0, 300)))
    keys = draw(st.lists(st.sampled_from("abc"), min_size=len(times), max_size=len(times)))
    size = draw(st.integers(50, 600))
    assigner: WindowAssigner = (
        Tumbling(size) if draw(st.booleans()) else Sliding(size, draw(st.integers(25, size)))
    )
    return {
        "events": [
            {"k": k, "ts": t, "i": i} for i, (k, t) in enumerate(zip(keys, times, strict=True))
        ],
        "bound": draw(st.integers(0, 300)),
        "quantum": draw(st.sampled_from([1, 1, 50, 250])),
        "lateness": draw(st.integers(0, 400)),
        "assigner": assigner,
        "batch": draw(st.integers(1, 15)),
    }


Firings = dict[tuple[str, int], int]


class Quantised(WatermarkGenerator):
    """A custom strategy: ``newest - bound``, rounded down to a multiple of ``quantum``, - 1."""

    def __init__(self, bound: int, quantum: int) -> None:
        self.bound, self.quantum, self.newest = bound, quantum, MIN_WATERMARK

    def on_event(self, timestamp: int) -> None:
        self.newest = max(self.newest, timestamp)

    def current_watermark(self) -> int:
        if self.newest == MIN_WATERMARK:
            return MIN_WATERMARK
        return watermark_after(self.newest, self.bound, self.quantum)


def watermark_after(newest: int, bound: int, quantum: int) -> int:
    return (newest - bound) // quantum * quantum - 1


def keyed_events(s: dict[str, object], name: str) -> tuple[Dataflow, KeyedStream]:
    """A flow reading the scenario's events in its batches, with its strategy, keyed by ``k``."""
    flow = Dataflow(name)
    source = flow.source(
        "src",
        TestingSource(s["events"], batch_size=int(s["batch"])),  # type: ignore[arg-type, call-overload]
        timestamps="ts",
        watermarks=strategy(s),
    )
    return flow, source.key_by("by-k", "k")


def strategy(s: dict[str, object]) -> WatermarkStrategy:
    """Bounded out-of-orderness (monotonous for a bound of 0), or the custom one."""
    bound, quantum = int(s["bound"]), int(s["quantum"])  # type: ignore[call-overload]
    if quantum > 1:
        return CustomWatermarks(functools.partial(Quantised, bound, quantum), "quantised")
    return monotonous() if bound == 0 else BoundedOutOfOrderness(bound)


def reference(
    s: dict[str, object], *, per_batch: bool = False
) -> tuple[dict[tuple[str, int], int], list[int], Firings]:
    """``per_batch``: an allowed-late update fires once per batch (vectorised windows),
    not once per record."""
    events, assigner = s["events"], s["assigner"]
    assert isinstance(events, list) and isinstance(assigner, WindowAssigner)
    batch, bound, lateness = int(s["batch"]), int(s["bound"]), int(s["lateness"])  # type: ignore[call-overload]
    ts = np.array([e["ts"] for e in events], dtype=np.int64)
    batch_max = np.maximum.reduceat(ts, np.arange(0, len(ts), batch))
    seen_before = np.concatenate([[MIN_WATERMARK], np.maximum.accumulate(batch_max)[:-1]])
    quantum = int(s["quantum"])  # type: ignore[call-overload]
    watermark_before = np.where(
        seen_before == MIN_WATERMARK,
        MIN_WATERMARK,
        watermark_after(seen_before, bound, quantum),
    )
    met = watermark_before[np.arange(len(ts)) // batch]  # the watermark each record meets
    rows, starts = assigner.assign_starts(ts)
    size = assigner.size_ms  # type: ignore[attr-defined]
    open_ = starts + size - 1 + lateness > met[rows]
    pairs = pa.table(
        {"k": pa.array([events[r]["k"] for r in rows[open_]], pa.string()), "start": starts[open_]}
    )
    counted = pairs.group_by(["k", "start"]).aggregate([([], "count_all")])
    result = {
        (k, s_): n
        for k, s_, n in zip(
            counted["k"].to_pylist(),
            counted["start"].to_pylist(),
            counted["count_all"].to_pylist(),
            strict=True,
        )
    }
    placed = np.zeros(len(ts), dtype=bool)
    placed[rows[open_]] = True
    # a window fires once when the watermark passes its end (if it held a record by
    # then), and once more for every record added after that, within the lateness
    reached = starts + size - 1 <= met[rows]
    firings: Firings = collections.Counter()
    on_time: set[tuple[str, int]] = set()
    updates: set[tuple[str, int, int]] = set()
    for r, start, is_open, late_add in zip(rows, starts, open_, reached, strict=True):
        if is_open:
            slot = (events[r]["k"], int(start))
            if not late_add:
                on_time.add(slot)
            elif per_batch:
                updates.add((*slot, int(r) // batch))
            else:
                firings[slot] += 1
    for k, start, _ in updates:
        firings[(k, start)] += 1
    for slot in on_time:
        firings[slot] += 1
    return result, [int(i) for i in np.flatnonzero(~placed)], dict(firings)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.booleans())
def test_streamed_windows_equal_the_reference(s: dict[str, object], vectorised: bool) -> None:
    """Per record (``window`` with ``count()``) and vectorised (``window_agg``) alike."""
    flow, keyed = keyed_events(s, "windows")
    out, late = TestingSink(), TestingSink()
    lateness = int(s["lateness"])  # type: ignore[call-overload]
    assigner = s["assigner"]
    assert isinstance(assigner, WindowAssigner)
    if vectorised:
        windows = keyed.window_agg(
            "w", assigner, timestamps="ts", how="count", output="n", allowed_lateness_ms=lateness
        )
    else:
        windows = keyed.window(
            "w",
            assigner,
            timestamps="ts",
            aggregate=count(),
            output="n",
            allowed_lateness_ms=lateness,
        )
    windows.sink("out", out)
    windows.late("late").sink("late-out", late)
    store = CheckpointStore(open_object_store(tempfile.mkdtemp()), "t/windows")
    LocalExecutor(flow, parallelism=1, store=store, config=CheckpointConfig(interval=1e9)).run()

    want, want_late, want_firings = reference(s, per_batch=vectorised)
    last: dict[tuple[str, int], tuple[int, int]] = {}
    for r in out.output:
        slot = (r["key"], r["window_start"])
        assert r["update"] == last.get(slot, (-1, 0))[0] + 1, "updates count up from 0"
        last[slot] = (r["update"], r["n"])
    assert {slot: n for slot, (_, n) in last.items()} == want
    assert {slot: u + 1 for slot, (u, _) in last.items()} == want_firings
    assert collections.Counter(r["i"] for r in late.output) == collections.Counter(want_late)


@st.composite
def valued(draw: st.DrawFn) -> dict[str, object]:
    """In-order events with integer or float values, some null; no late records."""
    n = draw(st.integers(1, 150))
    floats = draw(st.booleans())
    number = st.floats(-1e6, 1e6, allow_nan=False) if floats else st.integers(-(2**40), 2**40)
    values = draw(st.lists(st.one_of(st.none(), number), min_size=n, max_size=n))
    keys = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    return {
        "events": [
            {"k": k, "ts": i * 15, "v": v}
            for i, (k, v) in enumerate(zip(keys, values, strict=True))
        ],
        "type": pa.float64() if floats else pa.int64(),
        "size": draw(st.integers(30, 400)),
        "batch": draw(st.integers(1, 20)),
        "how": draw(st.sampled_from(["sum", "min", "max", "mean"])),
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valued())
def test_vectorised_sum_min_max_and_mean_equal_pyarrow(s: dict[str, object]) -> None:
    """Integer columns give exact int64 sums, minimums and maximums; nulls are skipped.

    Against pyarrow's ``group_by().aggregate()`` over the same table."""
    events, how, size = s["events"], str(s["how"]), int(s["size"])  # type: ignore[call-overload]
    assert isinstance(events, list)
    table = pa.table(
        {
            "k": pa.array([e["k"] for e in events], pa.int64()),
            "ts": pa.array([e["ts"] for e in events], pa.int64()),
            "v": pa.array([e["v"] for e in events], s["type"]),  # type: ignore[arg-type]
        }
    )
    flow = Dataflow("valued")
    out = TestingSink()
    source = flow.source(
        "src",
        TestingSource(table.to_pylist(), batch_size=int(s["batch"])),  # type: ignore[call-overload]
        timestamps="ts",
        watermarks=BoundedOutOfOrderness(0),
    )
    source.map_batches("typed", lambda b: b.cast(table.schema)).key_by("by-k", "k").window_agg(
        "w",
        Tumbling(size),
        timestamps="ts",
        how=how,
        column="v",
        output="x",  # type: ignore[arg-type]
    ).sink("out", out)
    store = CheckpointStore(open_object_store(tempfile.mkdtemp()), "t/valued")
    LocalExecutor(flow, parallelism=1, store=store, config=CheckpointConfig(interval=1e9)).run()

    ts = table["ts"].to_numpy()
    windows = table.append_column("start", pa.array(ts - ts % size))
    agg = windows.group_by(["k", "start"]).aggregate([("v", "mean" if how == "mean" else how)])
    want = {
        (k, st_): x
        for k, st_, x in zip(
            agg["k"].to_pylist(), agg["start"].to_pylist(), agg[f"v_{how}"].to_pylist(), strict=True
        )
    }
    if how == "sum":  # as with sum_of, a window of nulls sums to 0 (pyarrow says null)
        want = {slot: 0 if x is None else x for slot, x in want.items()}
    got = {(r["key"], r["window_start"]): r["x"] for r in out.output}
    assert got.keys() == want.keys()
    for slot, x in want.items():
        if x is None or s["type"] == pa.float64() or how == "mean":
            assert got[slot] == (None if x is None else np.float64(x)) or (
                x is not None and abs(got[slot] - x) <= 1e-9 * max(1.0, abs(x))
            ), (slot, got[slot], x)
        else:
            assert got[slot] == x and isinstance(got[slot], int), (slot, got[slot], x)


@st.composite
def two_columns(draw: st.DrawFn) -> dict[str, object]:
    """In-order events with an integer and a float column, both with nulls."""
    n = draw(st.integers(1, 120))
    ints = draw(
        st.lists(st.one_of(st.none(), st.integers(-(2**40), 2**40)), min_size=n, max_size=n)
    )
    reals = st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False))
    floats = draw(st.lists(reals, min_size=n, max_size=n))
    keys = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    events = [
        {"k": k, "ts": i * 15, "v": v, "p": f}
        for i, (k, v, f) in enumerate(zip(keys, ints, floats, strict=True))
    ]
    return {"events": events, "size": draw(st.integers(30, 400)), "batch": draw(st.integers(1, 20))}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(two_columns(), st.booleans())
def test_named_aggregates_of_two_columns_equal_pyarrow(
    s: dict[str, object], vectorised: bool
) -> None:
    """Five named aggregates over an int64 and a float64 column in one step, per record
    (``window``) and vectorised (``window_agg``), against pyarrow's group-by."""
    events, size = s["events"], int(s["size"])  # type: ignore[call-overload]
    assert isinstance(events, list)
    schema = pa.schema(
        [("k", pa.int64()), ("ts", pa.int64()), ("v", pa.int64()), ("p", pa.float64())]
    )
    table = pa.Table.from_pylist(events, schema=schema)
    flow, out = Dataflow("two-columns"), TestingSink()
    source = flow.source(
        "src",
        TestingSource(events, batch_size=int(s["batch"])),  # type: ignore[call-overload]
        timestamps="ts",
        watermarks=BoundedOutOfOrderness(0),
    )
    keyed = source.map_batches("typed", lambda b: b.cast(schema)).key_by("by-k", "k")
    named = {
        "n": count(),
        "total": sum_of("v"),
        "low": min_of("v"),
        "high": max_of("p"),
        "avg": mean_of("p"),
    }
    (keyed.window_agg if vectorised else keyed.window)("w", Tumbling(size), aggregate=named).sink(
        "out", out
    )
    store = CheckpointStore(open_object_store(tempfile.mkdtemp()), "t/two-columns")
    LocalExecutor(flow, parallelism=1, store=store, config=CheckpointConfig(interval=1e9)).run()

    ts = table["ts"].to_numpy()
    windows = table.append_column("start", pa.array(ts - ts % size))
    agg = windows.group_by(["k", "start"]).aggregate(
        [([], "count_all"), ("v", "sum"), ("v", "min"), ("p", "max"), ("p", "mean")]
    )
    want = {
        (r["k"], r["start"]): (r["count_all"], r["v_sum"] or 0, r["v_min"], r["p_max"], r["p_mean"])
        for r in agg.to_pylist()
    }
    got = {
        (r["k"], r["window_start"]): (r["n"], r["total"], r["low"], r["high"], r["avg"])
        for r in out.output
    }
    assert got.keys() == want.keys()
    for slot, (n, total, low, high, avg) in want.items():
        assert got[slot][:4] == (n, total, low, high), (slot, got[slot], want[slot])
        assert isinstance(got[slot][1], int)
        mean = got[slot][4]
        assert (mean is None) == (avg is None) and (
            avg is None or abs(mean - avg) <= 1e-9 * max(1.0, abs(avg))
        ), (slot, mean, avg)


def session_reference(
    s: dict[str, object], gap: int
) -> tuple[set[tuple[str, int, int, int]], list[int]]:
    """Sessions simulated record by record: before each batch the watermark it meets fires
    and purges the sessions it passed; a record whose own session ``[ts, ts + gap)`` has
    passed is late; otherwise it joins every live session of its key it overlaps or touches.
    """
    events = s["events"]
    assert isinstance(events, list)
    batch, bound = int(s["batch"]), int(s["bound"])  # type: ignore[call-overload]
    live: dict[str, list[list[int]]] = collections.defaultdict(list)  # [start, end, count]
    fired: set[tuple[str, int, int, int]] = set()
    late: list[int] = []
    newest = MIN_WATERMARK

    def fire_until(watermark: int) -> None:
        for key, sessions in live.items():
            for session in [x for x in sessions if x[1] - 1 <= watermark]:
                fired.add((key, session[0], session[1], session[2]))
                sessions.remove(session)

    for first in range(0, len(events), batch):
        quantum = int(s["quantum"])  # type: ignore[call-overload]
        watermark = (
            MIN_WATERMARK if newest == MIN_WATERMARK else watermark_after(newest, bound, quantum)
        )
        fire_until(watermark)
        for e in events[first : first + batch]:
            start, end = e["ts"], e["ts"] + gap
            if end - 1 <= watermark:
                late.append(e["i"])
                continue
            sessions = live[e["k"]]
            touching = [x for x in sessions if x[0] <= end and start <= x[1]]
            merged = [
                min([start, *(x[0] for x in touching)]),
                max([end, *(x[1] for x in touching)]),
                1 + sum(x[2] for x in touching),
            ]
            live[e["k"]] = [x for x in sessions if x not in touching] + [merged]
        newest = max(newest, *(e["ts"] for e in events[first : first + batch]))
    fire_until(MAX_WATERMARK)
    return fired, late


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.integers(20, 300))
def test_streamed_sessions_equal_the_reference(s: dict[str, object], gap: int) -> None:
    """Session windows (no allowed lateness): each session fires once, with its count."""
    flow, keyed = keyed_events(s, "sessions")
    out, late = TestingSink(), TestingSink()
    sessions = keyed.window("w", Session(gap), timestamps="ts", aggregate=count(), output="n")
    sessions.sink("out", out)
    sessions.late("late").sink("late-out", late)
    store = CheckpointStore(open_object_store(tempfile.mkdtemp()), "t/sessions")
    LocalExecutor(flow, parallelism=1, store=store, config=CheckpointConfig(interval=1e9)).run()

    want, want_late = session_reference(s, gap)
    got = [(r["key"], r["window_start"], r["window_end"], r["n"]) for r in out.output]
    assert sorted(got) == sorted(want)  # each once: no duplicates
    assert all(r["update"] == 0 for r in out.output)
    assert collections.Counter(r["i"] for r in late.output) == collections.Counter(want_late)
