"""Keyed event-time timers under crashes and rescaling: each timer fires exactly once.

Generated events with per-key sequence numbers and event time ``seq * 100``
ms; every tenth record of a key registers a timer 1 s of event time later
(and one more it deletes again). ``on_timer`` emits ``(key, at)``: the output
does not depend on how records and watermarks interleave, so a crash-free run
fixes it. Runs with crashes at every life-cycle point and a run rescaled
P = 2 → 3 → 1 must publish exactly it (per key in timer order).
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from barrier_runtime_testing import life_cycle

from barrier_runtime.api import Dataflow
from barrier_runtime.api.watermarks import BoundedOutOfOrderness
from barrier_runtime.connectors.files import FileSink
from barrier_runtime.connectors.generator import GeneratorSource
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import FaultInjector, LocalExecutor, check_exactly_once

RESULTS: list[Any] = []
KEYS, EVENTS_PER_KEY = 30, 300


def event_time(record: dict[str, Any]) -> int:
    return int(record["seq"]) * 100


def on_record(state: Any, record: dict[str, Any], ctx: Any) -> tuple[Any, list[Any]]:
    if record["seq"] % 10 == 0:
        ctx.register_event_time_timer(ctx.timestamp + 1_000)
        ctx.register_event_time_timer(ctx.timestamp + 1_050)
        ctx.delete_event_time_timer(ctx.timestamp + 1_050)
    return (state or 0) + 1, []


def on_timer(state: Any, timer: Any, ctx: Any) -> tuple[Any, list[Any]]:
    return state, [{"key": ctx.key, "at": timer.time}]


def run(world: pathlib.Path, parallelism: int, rate: float | None = None, **kw: Any) -> list[Any]:
    flow = Dataflow("timers")
    source = GeneratorSource(
        keys=KEYS,
        events_per_key=EVENTS_PER_KEY,
        partitions=4,
        batch_size=40,
        rate_per_partition=rate,
    )
    events = flow.source(
        "events", source, timestamps=event_time, watermarks=BoundedOutOfOrderness(0)
    )
    keyed = events.key_by("by-key", "key")
    keyed.process("timers", on_record, on_timer, timestamps=event_time).sink(
        "out", FileSink(str(world / "out"))
    )
    store = CheckpointStore(open_object_store(str(world / "store")), "default/timers")
    config = kw.pop("config", CheckpointConfig(interval=0.05))
    RESULTS.append(
        LocalExecutor(flow, parallelism=parallelism, store=store, config=config, **kw).run()
    )
    return list(FileSink(str(world / "out")).read_committed())


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    got = run(tmp_path_factory.mktemp("clean"), 2)
    want = {(f"k{k}", s * 100 + 1_000) for k in range(KEYS) for s in range(0, EVENTS_PER_KEY, 10)}
    assert sorted((r["key"], r["at"]) for r in got) == sorted(want)
    return got


CRASHES = life_cycle.everywhere("timers", (1_500, 1_000, 500))


@pytest.mark.parametrize("unaligned", [False, True], ids=["aligned", "unaligned"])
def test_every_timer_fires_once_through_at_least_ten_crashes(
    tmp_path: pathlib.Path, expected: list[Any], unaligned: bool
) -> None:
    got = run(
        tmp_path,
        2,
        rate=2_000,  # long enough for every crash to come up
        config=CheckpointConfig(interval=0.05, unaligned=unaligned),
        fault_injector=FaultInjector(CRASHES),
        max_restarts=len(CRASHES) + 1,
    )
    report = check_exactly_once(expected, got, key="key", seq="at")
    assert report.exactly_once, report
    life_cycle.assert_every_point_crashed(RESULTS[-1])


def test_timers_follow_their_keys_through_rescaling_2_3_1(
    tmp_path: pathlib.Path, expected: list[Any]
) -> None:
    world = tmp_path / "world"
    got = life_cycle.crash_twice_then(lambda p, **kw: run(world, p, **kw), rate=2_000)
    report = check_exactly_once(expected, got, key="key", seq="at")
    assert report.exactly_once, report
