"""Event-time windows under injected crashes and rescaling: every window result exactly once.

The job: generated events with per-key sequence numbers and a deterministic
event time ``seq * 100 ms`` minus up to 120 ms of disorder, bounded
out-of-orderness watermarks (200 ms), keyed by ``key``, a 1-second tumbling
count per key, an exactly-once file sink. A crash-free run gives the expected
window results; runs with crashes at every life-cycle point (aligned and
unaligned) and a run rescaled P = 2 → 3 → 1 must publish exactly them: the
checker counts lost, duplicated and out-of-order (per key, by window start)
results.

The session case (vectorised ``window_agg`` with ``Session(500)``): each key's
events come in bursts of ten, 100 ms apart (minus the same disorder), bursts
1.1 s apart, so every burst is one session of ten; its sessions are open across
checkpoints, crashes and the rescale.
"""

from __future__ import annotations

import collections
import pathlib
from typing import Any

import pytest
from barrier_runtime_testing import life_cycle

from barrier_runtime.api import Dataflow
from barrier_runtime.api.watermarks import BoundedOutOfOrderness
from barrier_runtime.api.windows import Session, Tumbling, count
from barrier_runtime.connectors.files import FileSink
from barrier_runtime.connectors.generator import GeneratorSource
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import FaultInjector, LocalExecutor, check_exactly_once

RESULTS: list[Any] = []
KEYS, EVENTS_PER_KEY = 40, 400


def event_time(record: dict[str, object]) -> int:
    seq = int(record["seq"])  # type: ignore[call-overload]
    return seq * 100 - (seq * 37 % 7) * 20


BURST, SESSION_GAP_MS = 10, 500


def session_time(record: dict[str, object]) -> int:
    """``event_time`` with a 1 s pause after every ``BURST`` events of a key."""
    seq = int(record["seq"])  # type: ignore[call-overload]
    return event_time(record) + seq // BURST * 1_000


def windowed_counts(
    out: pathlib.Path,
    rate: float | None = None,
    *,
    vectorised: bool = False,
    sessions: bool = False,
) -> Dataflow:
    flow = Dataflow("window-counts")
    source = GeneratorSource(
        keys=KEYS,
        events_per_key=EVENTS_PER_KEY,
        partitions=4,
        batch_size=50,
        rate_per_partition=rate,
    )
    events = flow.source(
        "events", source, timestamps=event_time, watermarks=BoundedOutOfOrderness(200)
    )
    if sessions:
        stamped = events.map("stamp", lambda r: {**r, "ts": session_time(r)})
        counts = stamped.key_by("by-key", "key").window_agg(
            "counts", Session(SESSION_GAP_MS), timestamps="ts", how="count", output="n"
        )
    elif vectorised:  # event time as a column, for the vectorised path
        stamped = events.map("stamp", lambda r: {**r, "ts": event_time(r)})
        counts = stamped.key_by("by-key", "key").window_agg(
            "counts", Tumbling(1_000), timestamps="ts", how="count", output="n"
        )
    else:
        counts = events.key_by("by-key", "key").window(
            "counts", Tumbling(1_000), timestamps=event_time, aggregate=count(), output="n"
        )
    counts.sink("out", FileSink(str(out)))
    return flow


def run(
    world: pathlib.Path,
    parallelism: int,
    rate: float | None = None,
    vectorised: bool = False,
    sessions: bool = False,
    **kwargs: object,
) -> list[dict[str, object]]:
    store = CheckpointStore(open_object_store(str(world / "store")), "default/windows")
    config = kwargs.pop("config", CheckpointConfig(interval=0.05))
    result = LocalExecutor(
        windowed_counts(world / "out", rate, vectorised=vectorised, sessions=sessions),
        parallelism=parallelism,
        store=store,
        config=config,  # type: ignore[arg-type]
        **kwargs,  # type: ignore[arg-type]
    ).run()
    RESULTS.append(result)
    return list(FileSink(str(world / "out")).read_committed())


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    got = run(tmp_path_factory.mktemp("clean"), 2)
    reference = collections.Counter(
        (f"k{k}", event_time({"seq": s}) // 1000 * 1000)
        for k in range(KEYS)
        for s in range(EVENTS_PER_KEY)
    )
    assert {(r["key"], r["window_start"]): r["n"] for r in got} == dict(reference)
    assert all(r["update"] == 0 for r in got)
    return got


@pytest.fixture(scope="module")
def expected_sessions(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    got = run(tmp_path_factory.mktemp("clean-sessions"), 2, sessions=True)
    reference = {
        (f"k{k}", min(session_time({"seq": s}) for s in range(b, b + BURST))): BURST
        for k in range(KEYS)
        for b in range(0, EVENTS_PER_KEY, BURST)
    }
    assert {(r["key"], r["window_start"]): r["n"] for r in got} == reference
    assert all(r["update"] == 0 for r in got)
    return got


CRASHES = life_cycle.everywhere("counts", (2_000, 1_500, 1_000))


@pytest.mark.parametrize(
    ("unaligned", "vectorised"),
    [(False, False), (True, False), (False, True)],
    ids=["aligned", "unaligned", "vectorised-aligned"],
)
def test_every_window_result_once_through_at_least_ten_crashes(
    tmp_path: pathlib.Path, expected: list[dict[str, object]], unaligned: bool, vectorised: bool
) -> None:
    got = run(
        tmp_path,
        2,
        vectorised=vectorised,
        rate=2_000,  # long enough for every crash to come up
        config=CheckpointConfig(interval=0.05, unaligned=unaligned),
        fault_injector=FaultInjector(CRASHES),
        max_restarts=len(CRASHES) + 1,
    )
    report = check_exactly_once(expected, got, key="key", seq="window_start")
    assert report.exactly_once, report
    life_cycle.assert_every_point_crashed(RESULTS[-1])


@pytest.mark.parametrize("vectorised", [False, True], ids=["per-record", "vectorised"])
def test_windows_and_their_timers_survive_rescaling_2_3_1(
    tmp_path: pathlib.Path, expected: list[dict[str, object]], vectorised: bool
) -> None:
    world = tmp_path / "world"
    got = life_cycle.crash_twice_then(
        lambda p, **kw: run(world, p, vectorised=vectorised, **kw),
        rate=2_000,  # 4,000 events per partition: ~2 s, dozens of checkpoints
    )
    report = check_exactly_once(expected, got, key="key", seq="window_start")
    assert report.exactly_once, report


def test_every_session_result_once_through_at_least_ten_crashes(
    tmp_path: pathlib.Path, expected_sessions: list[dict[str, object]]
) -> None:
    got = run(
        tmp_path,
        2,
        sessions=True,
        rate=2_000,
        config=CheckpointConfig(interval=0.05),
        fault_injector=FaultInjector(CRASHES),
        max_restarts=len(CRASHES) + 1,
    )
    report = check_exactly_once(expected_sessions, got, key="key", seq="window_start")
    assert report.exactly_once, report
    life_cycle.assert_every_point_crashed(RESULTS[-1])


def test_open_sessions_survive_rescaling_2_3_1(
    tmp_path: pathlib.Path, expected_sessions: list[dict[str, object]]
) -> None:
    world = tmp_path / "world"
    got = life_cycle.crash_twice_then(
        lambda p, **kw: run(world, p, sessions=True, **kw), rate=2_000
    )
    report = check_exactly_once(expected_sessions, got, key="key", seq="window_start")
    assert report.exactly_once, report
