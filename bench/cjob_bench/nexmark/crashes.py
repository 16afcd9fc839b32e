"""Nexmark queries under random crash plans, run many times: the exactly-once stress test.

Each run of :func:`stress` crashes the job three times, each in the attempt
after the one before: a worker in the middle of processing (a random subtask,
after a random number of records), a sink while it commits the first
checkpoint after that, and the query's stateful step while it restores. Every
run's committed output must equal the oracle's; the mismatches are returned
with what happened in the run. This is how the two final-checkpoint bugs of
the driver were found, and a subtask that finished while back-pressured
without firing the timers of its last watermark (q5 lost the windows that
fire at end of input, 7 runs in 500 on a loaded 2-core machine; fixed, with
``tests/e2e/barrier_runtime/test_watermarks_under_backpressure.py``). Run it
with ``python -m cjob_bench nexmark crashes``.
"""

from __future__ import annotations

import pathlib
import random
import shutil
from typing import Any

from barrier_runtime.testing import Crash, FaultInjector, FaultPoint
from cjob_bench.nexmark import local

STATEFUL_STEP = {
    "q0": "bids",
    "q1": "bids",
    "q2": "bids",
    "q3": "q3",
    "q4": "winning-bids",
    "q5": "bids-per-auction",
    "q7": "q7",
    "q8": "q8",
    "q11": "q11",
    "q12": "q12",
}
"""The task whose restore crashes: the query's first stateful step (a source if none)."""
AFTER_RECORDS = (300, 2_000, 6_000, 12_000, 17_000)


def plan(query: str, rng: random.Random) -> list[Crash]:
    """Three crashes in attempts 0, 1 and 2: processing, commit, restore."""
    return [
        Crash(
            FaultPoint.PROCESSING,
            subtask=rng.choice((0, 1)),
            after_records=rng.choice(AFTER_RECORDS),
        ),
        Crash(FaultPoint.COMMIT, checkpoint_id=1, attempt=1),
        Crash(FaultPoint.RESTORE, task=STATEFUL_STEP[query], attempt=2),
    ]


def stress(
    query: str, data: pathlib.Path, work: pathlib.Path, *, runs: int, seed: int = 0
) -> list[dict[str, Any]]:
    """Run ``query`` ``runs`` times at P = 2 under random crash plans; the runs that differ."""
    rng = random.Random(seed)
    bad = []
    for i in range(runs):
        crashes = plan(query, rng)
        done = local.run(
            query,
            data,
            work / f"run-{i}",
            interval=0.02,
            batch_size=500,
            fault_injector=FaultInjector(crashes),
            max_restarts=len(crashes),
        )
        equal, why = local.check(done, data)
        if not equal:
            bad.append(
                {
                    "run": i,
                    "check": why,
                    "crashes": [f.split(": ")[-1] for f in done.result.failures],
                    "restored_from": done.result.restored_from,
                    "completed_checkpoints": done.result.completed_checkpoints,
                }
            )
        shutil.rmtree(work / f"run-{i}")
    return bad
