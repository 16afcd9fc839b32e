"""The checkpoint-cost benchmark end to end: ``cjob run`` on local Spark, CPU time of every process.

One repeat of each variant of Nexmark q1 over 20 000 events, no warm-up:
every run completes, its committed output equals the oracle's, and every
kind of process (the ``cjob run`` driver, the Spark JVM, PySpark's workers,
the S3 server) was charged CPU time; the run with checkpoints every 1 s
completed more checkpoints than the one without periodic checkpoints.
"""

from __future__ import annotations

import pathlib

from cjob_bench.nexmark import cpu_cost, files
from cjob_bench.nexmark.config import NexmarkConfig


def test_every_process_kind_is_counted(tmp_path: pathlib.Path) -> None:
    data = tmp_path / "events"
    # 20 s of event time: a run long enough for a few 1 s checkpoints
    files.write(NexmarkConfig(events=20_000, generators=2, first_event_rate=1_000), data)
    work = tmp_path / "work"
    work.mkdir()
    job = cpu_cost.nexmark_job("q1", data)
    doc = cpu_cost.measure(job, work, repeats=1, warmup=False)
    assert [r["variant"] for r in doc["runs"]] == [cpu_cost.WITH, cpu_cost.WITHOUT]
    for run in doc["runs"]:
        assert "error" not in run, run.get("error")
        assert run["correct"]["equal"], run["correct"]
        assert run["correct"]["rows"] == doc["events_read"] > 0
        kinds = run["cpu_seconds_by_kind"]
        assert set(kinds) == set(cpu_cost.KINDS)
        assert all(seconds > 0 for seconds in kinds.values()), kinds
        assert run["cpu_seconds"] >= sum(kinds.values()) - 0.01
        assert run["accounting_gap_ticks"] == 0
        assert run["cpu_seconds_unseen_bound"] < 2.0
        assert run["cpu_seconds_per_million_events"] > 0 and run["wall_seconds"] > 0
    with_, without = doc["runs"]
    assert with_["checkpoints_completed"] > without["checkpoints_completed"] >= 1
    medians = doc["medians"]
    assert medians[cpu_cost.WITH]["runs"] == medians[cpu_cost.WITHOUT]["runs"] == 1
    overhead = medians["overheads"][cpu_cost.WITH]
    assert "cpu_overhead" in overhead and "wall_overhead" in overhead
