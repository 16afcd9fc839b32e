"""Windows with several named aggregates through crashes, restores and rescaling.

The job of ``test_windows_exactly_once`` with a value column and one window step
computing five named aggregates (count, sum, min, max, mean), keyed by ``user``
(results carry it as ``user``), the event time declared at the source (and read
from the column a map adds, for the vectorised window): a
crash-free run gives the reference; runs crashing at every life-cycle point, and
a run rescaled P = 2 → 3 → 1, must publish exactly it (lost, duplicated and
out-of-order results counted per user by window start). Both the vectorised
``window_agg`` (panes of several value columns in one snapshot table, split by
key group) and the per-record ``window`` (a list accumulator per key and window).
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from barrier_runtime_testing import life_cycle

from barrier_runtime.api import Dataflow
from barrier_runtime.api.watermarks import BoundedOutOfOrderness
from barrier_runtime.api.windows import Tumbling, count, max_of, mean_of, min_of, sum_of
from barrier_runtime.connectors.files import FileSink
from barrier_runtime.connectors.generator import GeneratorSource
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import FaultInjector, LocalExecutor, check_exactly_once

RESULTS: list[Any] = []
KEYS, EVENTS_PER_KEY = 40, 400


def event_time(seq: int) -> int:
    return seq * 100 - (seq * 37 % 7) * 20


def value(seq: int) -> int | None:
    return None if seq % 9 == 0 else seq * 7 % 23 - 11


def enrich(record: dict[str, Any]) -> dict[str, Any]:
    seq = int(record["seq"])
    return {
        "user": record["key"],
        "seq": seq,
        "ts": event_time(seq),
        "v": value(seq),
        "price": seq % 5 / 4,
    }


def flow_of(out: pathlib.Path, rate: float | None, vectorised: bool) -> Dataflow:
    flow = Dataflow("window-stats")
    source = GeneratorSource(
        keys=KEYS,
        events_per_key=EVENTS_PER_KEY,
        partitions=4,
        batch_size=50,
        rate_per_partition=rate,
    )
    events = flow.source(
        "events",
        source,
        timestamps=lambda r: event_time(int(r["seq"])),
        watermarks=BoundedOutOfOrderness(200),
    ).map("enrich", enrich)
    stats = {
        "n": count(),
        "total": sum_of("v"),
        "low": min_of("v"),
        "high": max_of("v"),
        "avg_price": mean_of("price"),
    }
    keyed = events.key_by("by-user", "user")
    if vectorised:  # reads event time from a column: the one the map added
        windows = keyed.window_agg("stats", Tumbling(1_000), timestamps="ts", aggregate=stats)
    else:  # the source's event time, carried
        windows = keyed.window("stats", Tumbling(1_000), aggregate=stats)
    windows.sink("out", FileSink(str(out)))
    return flow


def run(
    world: pathlib.Path,
    parallelism: int,
    rate: float | None = None,
    vectorised: bool = True,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    store = CheckpointStore(open_object_store(str(world / "store")), "default/stats")
    config = kwargs.pop("config", CheckpointConfig(interval=0.05))
    result = LocalExecutor(
        flow_of(world / "out", rate, vectorised),
        parallelism=parallelism,
        store=store,
        config=config,
        **kwargs,
    ).run()
    RESULTS.append(result)
    return list(FileSink(str(world / "out")).read_committed())


def reference() -> dict[tuple[str, int], tuple[int, int, int | None, int | None, float]]:
    groups: dict[tuple[str, int], list[int]] = {}
    for k in range(KEYS):
        for s in range(EVENTS_PER_KEY):
            groups.setdefault((f"k{k}", event_time(s) // 1000 * 1000), []).append(s)
    out = {}
    for window, seqs in groups.items():
        values = [v for v in map(value, seqs) if v is not None]
        prices = [s % 5 / 4 for s in seqs]
        out[window] = (
            len(seqs),
            sum(values),
            min(values, default=None),
            max(values, default=None),
            sum(prices) / len(prices),
        )
    return out


def as_reference(rows: list[dict[str, Any]]) -> dict[tuple[str, int], tuple[Any, ...]]:
    return {
        (r["user"], r["window_start"]): (
            r["n"],
            r["total"],
            r["low"],
            r["high"],
            pytest.approx(r["avg_price"]),
        )
        for r in rows
    }


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    got = run(tmp_path_factory.mktemp("clean"), 2)
    assert as_reference(got) == reference()
    assert all(r["update"] == 0 and "key" not in r for r in got)
    return got


@pytest.mark.parametrize("vectorised", [True, False], ids=["window_agg", "window"])
def test_named_aggregates_once_each_through_crashes_at_every_point(
    tmp_path: pathlib.Path, expected: list[dict[str, Any]], vectorised: bool
) -> None:
    crashes = life_cycle.everywhere("stats", (2_000, 1_500, 1_000))
    got = run(
        tmp_path,
        2,
        rate=2_000,
        vectorised=vectorised,
        fault_injector=FaultInjector(crashes),
        max_restarts=len(crashes) + 1,
    )
    report = check_exactly_once(expected, got, key="user", seq="window_start")
    assert report.exactly_once, report
    assert as_reference(got) == reference()
    life_cycle.assert_every_point_crashed(RESULTS[-1])


def test_named_aggregates_survive_rescaling_2_3_1(
    tmp_path: pathlib.Path, expected: list[dict[str, Any]]
) -> None:
    world = tmp_path / "world"
    got = life_cycle.crash_twice_then(lambda p, **kw: run(world, p, **kw), rate=2_000)
    report = check_exactly_once(expected, got, key="user", seq="window_start")
    assert report.exactly_once, report
    assert as_reference(got) == reference()
