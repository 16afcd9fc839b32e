"""Every keyed operator through incremental snapshots: restored from any checkpoint's chain
(a base and its deltas, with new bases taken on the way), it goes on exactly as the
operator that never stopped.

Each case runs one operator over rounds of batches and watermarks, taking an incremental
snapshot after each round (links "uploaded" into a dict). Then, for every round, a new
operator restores that checkpoint's chain and is fed the remaining rounds: its output
must equal the live operator's output for those rounds. A restore that lost a change,
kept a deleted key or applied a delta twice would change what fires or what it sums.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from barrier_runtime.api import Dataflow, steps
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api.watermarks import BoundedOutOfOrderness
from barrier_runtime.api.windows import Session, Sliding, Tumbling, count, max_of, sum_of
from barrier_runtime.core import metadata, types
from barrier_runtime.task import state_chains
from barrier_runtime.task.operators import base, keyed, keyed_sum, session_agg, window, window_agg
from barrier_runtime.testing import TestingSink, TestingSource

MAX_P = 128
RANGE = (0, MAX_P - 1)


class Recorder:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def __call__(self, batch: batch_mod.Batch) -> None:
        self.rows += list(batch.rows())


def _step(build: Callable[[Any], Any], kind: type) -> Any:
    flow = Dataflow("incremental")
    events = flow.source(
        "events", TestingSource([]), timestamps="ts", watermarks=BoundedOutOfOrderness(0)
    )
    build(events.key_by("by-user", "user")).sink("out", TestingSink())
    (step,) = [s for s in flow.steps if isinstance(s, kind)]
    return step


def _count(state: Any, record: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    if record["v"] % 7 == 0:  # now and then a key's state goes away
        return None, [{"user": record["user"], "n": 0}]
    n = (state or [0])[0] + 1
    return [n, record["v"]], [{"user": record["user"], "n": n}]


AGGS = {"n": count(), "total": sum_of("v"), "high": max_of("v")}
Factory = Callable[[Recorder], base.StatefulOperator]


def _window_agg(assigner: Any) -> Factory:
    step = _step(lambda k: k.window_agg("w", assigner, aggregate=AGGS), steps.WindowAggStep)
    kind = session_agg.SessionAggOperator if assigner.merging else window_agg.WindowAggOperator
    return lambda out: kind(step, out, None, RANGE, MAX_P)


def _window(assigner: Any) -> Factory:
    step = _step(lambda k: k.window("w", assigner, aggregate=AGGS), steps.WindowStep)
    return lambda out: window.WindowOperator(step, out, None, RANGE, MAX_P)


def _sum() -> Factory:
    step = _step(lambda k: k.sum("s", "v"), steps.KeyedSumStep)
    return lambda out: keyed_sum.KeyedSumOperator(step, out, RANGE, MAX_P)


def _stateful() -> Factory:
    step = _step(lambda k: k.stateful_map("c", _count), steps.StatefulStep)
    return lambda out: keyed.KeyedOperator(step, out, RANGE, MAX_P)


CASES = {
    "window_agg-tumbling": _window_agg(Tumbling(1_000)),
    "window_agg-sliding": _window_agg(Sliding(2_000, 500)),
    "window_agg-session": _window_agg(Session(300)),
    "window-sliding": _window(Sliding(2_000, 500)),
    "window-session": _window(Session(300)),
    "sum": _sum(),
    "stateful_map": _stateful(),
}


def _rounds(seed: int) -> list[tuple[list[dict[str, Any]], int]]:
    """Batches of events with rising, jittered times, each followed by a watermark."""
    rng = random.Random(seed)
    rounds, now = [], 0
    for _ in range(25):
        rows = []
        for _ in range(rng.randrange(0, 60)):
            user = f"u{rng.randrange(40)}" if rng.random() < 0.8 else rng.randrange(5)
            rows.append(
                {"user": str(user), "ts": now + rng.randrange(0, 900), "v": rng.randrange(50)}
            )
        now += rng.randrange(100, 700)
        rounds.append((rows, now - 400))
    return rounds


def _feed(op: base.StatefulOperator, rows: list[dict[str, Any]], watermark: int) -> None:
    if rows:
        op.process(batch_mod.Batch.from_arrow(pa.RecordBatch.from_pylist(rows)), 0)
    op.on_watermark(watermark)


def _upload(link: state_chains.Link, stored: dict[str, bytes]) -> None:
    data = link.encode()
    key = f"shared/{len(stored)}"
    stored[key] = data
    link.succeeded(
        metadata.StateHandle(
            types.StepId("w"), 0, key, len(data), "", as_of=link.as_of, delta=link.delta
        )
    )


@pytest.mark.parametrize("name", list(CASES))
def test_a_restore_from_any_chain_goes_on_as_the_live_operator(name: str) -> None:
    make = CASES[name]
    rounds = _rounds(seed=len(name))
    policy = state_chains.MaterializationPolicy(max_deltas=5, max_delta_ratio=0.6, min_rows=20)
    chains = state_chains.StateChains(policy)
    out = Recorder()
    live = make(out)
    stored: dict[str, bytes] = {}
    checkpoints: list[tuple[list[metadata.StateHandle], int, int]] = []
    bases = set()
    lagging: list[state_chains.Link] = []
    for cid, (rows, watermark) in enumerate(rounds, start=1):
        _feed(live, rows, watermark)
        for link in lagging:
            _upload(link, stored)
        builder = base.SnapshotBuilder(types.CheckpointId(cid), 0, chains=chains)
        live.snapshot(builder)
        assert not builder.blobs and builder.chained
        lagging = []
        for chained in builder.chained:
            for link in chained.uploads:
                _upload(link, stored)
            for link in chained.background:
                if cid % 2:
                    lagging.append(link)  # uploaded during the next round
                else:
                    _upload(link, stored)
        handles = [link.handle(0) for c in builder.chained for link in c.references]
        bases.update(h.as_of for h in handles if not h.delta)
        checkpoints.append((handles, watermark, len(out.rows)))
    assert len(bases) > 2, "new bases were taken"
    for at, (handles, watermark, emitted) in enumerate(checkpoints):
        again = Recorder()
        restored = make(again)
        restored.watermark_restored(watermark)
        ordered = sorted(handles, key=lambda h: h.restore_order)
        restored.restore(stored[h.key] for h in ordered)
        for rows, later in rounds[at + 1 :]:
            _feed(restored, rows, later)
        assert again.rows == out.rows[emitted:], f"restored from checkpoint {at + 1}"
