"""Checkpoint overhead from two jobs that run at the same time: one with checkpoints, one without.

Two identical runs on a shared machine, minutes apart, differ by up to a
third (measured: 26 s and 35 s for the same W2 job, back to back), which
hides an overhead of a few percent however the runs are paired. Here the
job with checkpoints every 1 s and the job without periodic checkpoints are
submitted together on one SparkSession with a slot for each of their
workers, and compared over the window in which both were processing: from
the later of their first sink writes to the earlier of their last, minus a
margin at each end. Both see the same machine at the same moments, so its
drift cancels; they share its cores, so each runs at about half speed.

What the figure leaves out, and what it counts twice: the S3 server works
for the job with checkpoints, but its CPU slows both jobs alike, so it is
left out of ``overhead``; and each job's own cost per checkpoint is spread
over about half as many records as when it runs alone, so it counts about
twice. Alone, the overhead is the job's own cost plus the server's, which is
at most ``overhead`` plus the server's share of the machine over the pair:
``overhead_bound`` (the driver, shared by both jobs in one process, is not in it).

>>> cp = [(10.0 + i / 10, 100) for i in range(200)]       # 1000 records/s from 10 s
>>> nocp = [(11.0 + i / 10, 110) for i in range(200)]     # 1100 records/s from 11 s
>>> w = compare(cp, nocp, margin=1.0)
>>> w["window_seconds"], round(w["overhead"], 4)
(16.9, 0.0909)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from cjob_bench.harness import machine
from cjob_bench.workloads import data
from cjob_bench.workloads import files_ours as ours

Timeline = Sequence[tuple[float, int]]
"""A sink's writes: (wall-clock time, records written), in time order."""


def compare(with_cp: Timeline, without: Timeline, *, margin: float = 2.0) -> dict[str, Any]:
    """Rates of both timelines over their common window and ``1 - with / without``.

    ``ValueError`` when the jobs did not overlap for more than the two margins.
    """
    if not with_cp or not without:
        raise ValueError("a job wrote nothing: no window to compare")
    start = max(with_cp[0][0], without[0][0]) + margin
    end = min(with_cp[-1][0], without[-1][0]) - margin
    if end <= start:
        raise ValueError("the two jobs did not run at the same time long enough to compare")
    rate_cp = _records_between(with_cp, start, end) / (end - start)
    rate_nocp = _records_between(without, start, end) / (end - start)
    return {
        "window_seconds": round(end - start, 3),
        "records_per_second_with_checkpoints": round(rate_cp),
        "records_per_second_without": round(rate_nocp),
        "overhead": 1 - rate_cp / rate_nocp,
    }


def _records_between(timeline: Timeline, start: float, end: float) -> int:
    return sum(n for t, n in timeline if start < t <= end)


def run_pair(
    o: ours.Ours, workload: str, dataset: data.DataSet, *, compared: bool = True
) -> dict[str, Any]:
    """Submit the two jobs together (``o`` needs ``sink_timeline`` and 2P slots); compare
    them unless ``compared`` is false (a warm-up or calibration pair: only ``runs``)."""
    if not o.sink_timeline:
        raise ValueError("run_pair needs Ours(sink_timeline=True)")
    results: dict[str, dict[str, Any]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def job(name: str, interval: float | None) -> None:
        try:
            start.wait()
            results[name] = o.run(workload, dataset, interval=interval)
        except BaseException as exc:  # reported below, on the caller's thread
            errors.append(exc)

    threads = [
        threading.Thread(target=job, args=("with_checkpoints_1s", 1.0)),
        threading.Thread(target=job, args=("without_periodic_checkpoints", None)),
    ]
    server_cpu = machine.cpu_seconds(o.s3.pid)
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    wall = time.monotonic() - started
    server_cpu_after = machine.cpu_seconds(o.s3.pid)
    cp, nocp = results["with_checkpoints_1s"], results["without_periodic_checkpoints"]
    timelines = cp.pop("sink_timeline"), nocp.pop("sink_timeline")
    out = compare(*timelines) if compared else {}
    if compared and server_cpu is not None and server_cpu_after is not None:
        share = (server_cpu_after - server_cpu) / (wall * machine.cpu_count())
        out["s3_server_cpu_seconds"] = round(server_cpu_after - server_cpu, 3)
        out["s3_server_share_of_machine"] = round(share, 5)
        out["overhead_bound"] = out["overhead"] + share
    out["runs"] = {"with_checkpoints_1s": cp, "without_periodic_checkpoints": nocp}
    return out
