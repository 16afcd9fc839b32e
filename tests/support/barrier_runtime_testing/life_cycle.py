"""Crash plans over the whole checkpoint life cycle, shared by the in-process exactly-once tests.

:func:`everywhere` spreads twelve crashes over processing, snapshot, upload,
restore and commit, in different attempts (the attempt filters make them land
one after the other); :func:`assert_every_point_crashed` checks that a run
really went through them. :func:`crash_twice_then` is the rescaling
scenario: two runs at other parallelisms die at a snapshot, then the last
one finishes from what they left.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from barrier_runtime.testing import Crash, FaultInjector, FaultPoint, JobFailedError

P = FaultPoint


def everywhere(stateful_task: str, after_records: Sequence[int]) -> list[Crash]:
    """Twelve crashes, every :class:`FaultPoint` at least twice; ``after_records``: three
    record counts for the processing crashes (the first, in attempt 5, in attempt 10)."""
    first, second, third = after_records
    return [
        Crash(P.PROCESSING, subtask=0, after_records=first),
        Crash(P.SNAPSHOT, task=stateful_task, checkpoint_id=3),
        Crash(P.UPLOAD, task=stateful_task, checkpoint_id=5),
        Crash(P.RESTORE, attempt=3),
        Crash(P.COMMIT, checkpoint_id=7),
        Crash(P.PROCESSING, subtask=1, after_records=second, attempt=5),
        Crash(P.SNAPSHOT, task="events", checkpoint_id=10),
        Crash(P.UPLOAD, task="events", checkpoint_id=12),
        Crash(P.COMMIT, checkpoint_id=14),
        Crash(P.RESTORE, attempt=9),
        Crash(P.PROCESSING, subtask=0, after_records=third, attempt=10),
        Crash(P.SNAPSHOT, checkpoint_id=18, attempt=11),
    ]


def assert_every_point_crashed(result: Any, at_least: int = 10) -> None:
    """The job restarted once per injected crash, ``at_least`` of them, at every point."""
    fired = [f for f in result.failures if "injected crash: " in f]
    assert len(fired) >= at_least, fired
    assert result.restarts == len(fired) == len(result.failures), fired
    assert {p for p in P if any(f"injected crash: {p.value}" in f for f in fired)} == set(P)


def crash_twice_then(run: Callable[..., Any], final_parallelism: int = 1, **kw: Any) -> Any:
    """Runs at P = 2 and P = 3 that each die at a snapshot, then one at ``final_parallelism``.

    ``run(parallelism, **kw)`` runs the job on the same store each time; ``kw``
    goes to the crashing runs (a rate, say, so that they last long enough).
    """
    for parallelism, crash_at in ((2, 4), (3, 8)):
        with pytest.raises(JobFailedError):
            run(
                parallelism,
                fault_injector=FaultInjector([Crash(P.SNAPSHOT, checkpoint_id=crash_at)]),
                max_restarts=0,
                **kw,
            )
    return run(final_parallelism)
