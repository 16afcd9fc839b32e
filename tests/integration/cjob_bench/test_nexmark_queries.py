"""Every Nexmark query on the in-process executor equals the oracle, with and without a crash.

The events: 40 000 from two generators at 400 events/s (100 s of event time:
fifty 2 s hops, ten 10 s windows, sessions that end and start), written as
Parquet files. Each query runs at P = 2 with aligned exactly-once checkpoints
every 20 ms, its results committed by a file sink; the committed rows must
equal the oracle's (as a multiset; q4 by each category's final average). Four
stateful queries (timers, sliding windows, a windowed join, sessions) run again with three
crashes, each in the attempt after the one before: in the middle of a worker's
processing, while the sink commits the first checkpoint (so the next attempt
restores a checkpoint's state) and while the stateful step restores it; each
attempt restores from the last completed checkpoint, and the committed results
must be the same.
"""

from __future__ import annotations

import pathlib
import random

import pytest
from cjob_bench.nexmark import crashes, files, local, queries
from cjob_bench.nexmark.config import NexmarkConfig

from barrier_runtime.testing import Crash, FaultInjector, FaultPoint


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("nexmark") / "events"
    files.write(NexmarkConfig(events=40_000, generators=2, first_event_rate=400), out, chunk=4_000)
    return out


@pytest.mark.parametrize("query", queries.QUERIES)
def test_the_query_equals_the_oracle(
    query: str, data: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    done = local.run(query, data, tmp_path, parallelism=2, interval=0.02, batch_size=1_000)
    equal, why = local.check(done, data)
    assert equal, why
    assert done.rows, "the data set is too small to give this query results"
    assert done.result.completed_checkpoints and done.result.restarts == 0


@pytest.mark.parametrize(
    ("query", "stateful_step"),
    [("q4", "winning-bids"), ("q5", "bids-per-auction"), ("q8", "q8"), ("q11", "q11")],
)
def test_the_query_equals_the_oracle_through_worker_crashes(
    query: str, stateful_step: str, data: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    faults = FaultInjector(
        [
            Crash(FaultPoint.PROCESSING, subtask=1, after_records=300),
            Crash(FaultPoint.COMMIT, checkpoint_id=1, attempt=1),
            Crash(FaultPoint.RESTORE, task=stateful_step, attempt=2),
        ]
    )
    done = local.run(
        query,
        data,
        tmp_path,
        parallelism=2,
        interval=0.02,
        batch_size=500,
        fault_injector=faults,
        max_restarts=3,
    )
    assert done.result.restarts == 3, done.result.failures
    assert all(done.result.restored_from[2:]), done.result.restored_from  # a checkpoint's state
    equal, why = local.check(done, data)
    assert equal, why


def test_the_crash_stress_runs_each_plan_and_finds_nothing_wrong_with_a_filter(
    data: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    plans = [crashes.plan("q2", random.Random(s)) for s in (0, 1)]
    assert all(
        [c.point for c in p] == [FaultPoint.PROCESSING, FaultPoint.COMMIT, FaultPoint.RESTORE]
        for p in plans
    )
    assert crashes.stress("q2", data, tmp_path, runs=2) == []
    assert list(tmp_path.iterdir()) == []  # every run's store and output removed
