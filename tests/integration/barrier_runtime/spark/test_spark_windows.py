"""Event-time windows on real Spark (local mode, 3 worker processes), S3 checkpoints:
every window result exactly once through five worker SIGKILLs, aligned and unaligned,
per record (``window``) and vectorised (``window_agg``).

Watermark and idle markers cross the network between worker processes here (the
keyed edge), and restores rebuild window state, timers and watermarks from S3.
"""

from __future__ import annotations

import collections
import dataclasses
import pathlib
from typing import Any

import pytest
from barrier_runtime_testing import spark_harness as h

from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.spark import driver
from barrier_runtime.testing import check_exactly_once

pytestmark = [pytest.mark.s3, pytest.mark.slow]

PIPELINE = str(pathlib.Path(__file__).with_name("windowed_count_pipeline.py"))
KEYS, EVENTS_PER_KEY = 60, 300


def _spec(
    out_url: str,
    store_url: str,
    *,
    rate: float | None,
    unaligned: bool = False,
    vectorised: bool = False,
) -> Any:
    args = ["--out", out_url, "--keys", str(KEYS), "--events-per-key", str(EVENTS_PER_KEY)]
    args += ["--partitions", "6", "--batch-size", "50"] + (["--vectorised"] if vectorised else [])
    if rate:
        args += ["--rate", str(rate)]
    spec = h.job_spec(PIPELINE, args, store_url, "default/windowed-count")
    return dataclasses.replace(spec, checkpoint=CheckpointConfig(interval=0.3, unaligned=unaligned))


def _event_time(seq: int) -> int:
    return seq * 100 - (seq * 37 % 7) * 20


@pytest.fixture(scope="module")
def windows_crash_free(spark: Any, s3_env: Any) -> list[dict[str, Any]]:
    out_url, store_url = h.s3_urls(s3_env)
    result = driver.SparkDriver(_spec(out_url, store_url, rate=None), session=spark).run()
    assert result.restarts == 0
    got = h.published(out_url)
    reference = collections.Counter(
        (f"k{k}", _event_time(s) // 1000 * 1000) for k in range(KEYS) for s in range(EVENTS_PER_KEY)
    )
    assert {(r["key"], r["window_start"]): r["n"] for r in got} == dict(reference)
    return got


@pytest.mark.parametrize(
    ("unaligned", "vectorised"),
    [(False, False), (True, False), (True, True)],
    ids=["aligned", "unaligned", "vectorised-unaligned"],
)
def test_window_results_exactly_once_through_five_worker_kills(
    spark: Any,
    s3_env: Any,
    windows_crash_free: list[dict[str, Any]],
    unaligned: bool,
    vectorised: bool,
) -> None:
    """``vectorised``: ``window_agg`` instead of ``window`` (the same counts)."""
    out_url, store_url = h.s3_urls(s3_env)
    # 18,000 events at 6 x 150 events/s: 20 s of work, more than five kills can let
    # through (each comes at most 2.5 s into an attempt, whose work the checkpoints keep).
    spec = _spec(out_url, store_url, rate=150, unaligned=unaligned, vectorised=vectorised)
    job = driver.SparkDriver(spec, session=spark)
    h.run_with_worker_kills(job, kills=5)
    report = check_exactly_once(
        windows_crash_free, h.published(out_url), key="key", seq="window_start"
    )
    print("exactly-once check:", report.as_dict())
    assert report.exactly_once, report
