"""State-scale's second job: W5's tumbling window count at 100 k keys, full against incremental.

Issue 32's starting point: W5 (:mod:`cjob_bench.workloads.w5_ours`, ``FileSource`` →
``key_by`` → ``window_agg(Tumbling(60 s), how="count")``, P = 2, aligned checkpoints every
``--interval`` s to the embedded S3 server) took 1.1-2.7 s per checkpoint at 100 k keys,
over its 1 s interval, because each checkpoint encoded every live window pane. This runs
the same job on the same Parquet files with full and with incremental checkpoints, ABBA
over ``--repeats`` pairs, and reports every periodic checkpoint's duration (trigger to
commit), state size and bytes written. Every run's window counts are checked against the
exact ones (the run is reported, and the benchmark fails, if any is missing, extra or
wrong). The goal: the incremental checkpoints' median duration under 200 ms.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
from typing import Any

from cjob_bench.harness import runs as harness
from cjob_bench.workloads import data, w5_ours

log = harness.logger("state-scale")
GOAL_SECONDS = 0.2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--window-keys", type=int, default=100_000)
    parser.add_argument(
        "--window-events",
        type=int,
        default=30_000_000,
        help="W5 events; 0 skips the window job",
    )


def run(a: argparse.Namespace, spark: Any, s3: Any, work: pathlib.Path) -> dict[str, Any]:
    """Full and incremental runs of W5 on one data set, and their checkpoints' spread."""
    dataset = data.generate_windows(
        work / "w5-data",
        events=a.window_events,
        keys=a.window_keys,
        files=max(8, a.window_events // 1_250_000),
        span_ms=100 * 60_000,
        out_of_order=0.01,
        disorder_ms=5_000,
        seed=5,
    )
    log(f"window job: {a.window_events:,} events, {a.window_keys:,} keys")
    runs: dict[str, list[dict[str, Any]]] = {"full": [], "incremental": []}
    for i in range(a.repeats):
        for kind in harness.interleaved(["full", "incremental"], i):
            result = w5_ours.run(
                spark,
                s3,
                dataset,
                work,
                parallelism=2,
                interval=a.interval,
                batch_size=65_536,
                incremental=kind == "incremental",
            )
            log(f"window job {kind}-{i}: {result['checkpoint_seconds']} {result['check']}")
            runs[kind].append(result)
    summary = {kind: _summary(results) for kind, results in runs.items()}
    return {
        "runs": runs,
        "summary": summary,
        "goal_incremental_median_seconds": GOAL_SECONDS,
        "all_windows_exact": all(
            not any(r["check"].values()) for results in runs.values() for r in results
        ),
    }


def _summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    durations = [d for r in results for d in r["checkpoint_seconds"]]
    uploaded = [b for r in results for b in r["checkpoint_uploaded_bytes"]]
    state = [b for r in results for b in r["checkpoint_state_bytes"]]
    if not durations:
        return {"checkpoints": 0}
    ordered = sorted(durations)
    return {
        "checkpoints": len(durations),
        "duration_s_median": round(statistics.median(ordered), 3),
        "duration_s_p90": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 3),
        "duration_s_max": round(ordered[-1], 3),
        "state_bytes_median": int(statistics.median(state)),
        "uploaded_bytes_median": int(statistics.median(uploaded)),
        "events_per_second_median": statistics.median(r["events_per_second"] for r in results),
    }
