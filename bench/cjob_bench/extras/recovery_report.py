"""W1's report: medians of interleaved repeats, ratios against the peers, and the targets.

Used by :mod:`.recovery` (``run recovery``); it turns the raw runs into the JSON it prints.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from cjob_bench.harness import machine

if TYPE_CHECKING:
    from cjob_bench.extras.recovery import Bench


def rounded(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(x, digits)


def minus(a: float | None, b: float) -> float | None:
    return None if a is None else a - b


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (the value at rank ceil(q/100 * n))."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, int(np.ceil(q / 100 * len(ordered))))
    return ordered[rank - 1]


def median_of(runs: list[dict[str, Any]], field: str) -> float:
    return float(statistics.median(r[field] for r in runs))


Series = dict[str, list[dict[str, Any]]]
MEASURES = ("end_to_end", "processing")


def describe_series(runs: Series) -> dict[str, Any]:
    """Medians of a series and its checkpoint overhead (1 - with / without) per measure."""
    out: dict[str, Any] = {}
    for label, key in (("without_checkpoints", "without"), ("with_checkpoints", "with")):
        out[label] = {
            f"{m}_events_per_second": median_of(runs[key], f"{m}_events_per_second")
            for m in MEASURES
        }
        out[label]["runs"] = runs[key]
    cpu = {
        k: round(float(statistics.median(r["cpu_seconds"]["total"] for r in runs[k])), 3)
        for k in runs
    }
    checkpoints = statistics.median(r["periodic_checkpoints_completed"] for r in runs["with"])
    out["cpu"] = {
        "median_cpu_seconds_without": cpu["without"],
        "median_cpu_seconds_with": cpu["with"],
        "cpu_overhead": rounded(cpu["with"] / cpu["without"] - 1, 4),
        "extra_cpu_seconds_per_checkpoint": rounded((cpu["with"] - cpu["without"]) / checkpoints, 4)
        if checkpoints
        else None,
        "cpu_seconds_per_million_events_with": rounded(
            cpu["with"] / runs["with"][0]["events"] * 1e6, 4
        ),
    }
    out["checkpoint_overhead"] = {
        m: rounded(
            1
            - out["with_checkpoints"][f"{m}_events_per_second"]
            / out["without_checkpoints"][f"{m}_events_per_second"],
            4,
        )
        for m in MEASURES
    }
    return out


def summarize(
    args: argparse.Namespace,
    bench: Bench,
    w1: Series | None,
    sustained: Series | None,
    recovery: dict[str, Any] | None,
    ss: dict[str, Any] | None,
) -> dict[str, Any]:
    assert w1 is not None
    ours = {"w1": describe_series(w1)}
    if sustained is not None:
        ours[f"sustained_{args.sustained_events}_events"] = describe_series(sustained)
    with_runs = w1["with"] + (sustained["with"] if sustained is not None else [])
    durations = [d for r in with_runs for d in r["periodic_checkpoint_seconds"]]
    alignments = [d for r in with_runs for d in r["periodic_checkpoint_alignment_seconds"]]
    overheads = {
        f"{series}.{m}": described["checkpoint_overhead"][m]
        for series, described in ours.items()
        for m in MEASURES
    }
    report: dict[str, Any] = {
        "benchmark": "W1 keyed running sum",
        "workload": {
            "events": args.events,
            "keys": args.keys,
            "key_distribution": "uniform int64 over [0, keys)",
            "value": "int64, uniform over [0, 1000)",
            "parallelism": args.parallelism,
            "batch_size": args.batch_size,
            "pipeline": "ColumnarGeneratorSource -> key_by('key') -> sum('sum', 'value') -> DiscardSink (cjob_bench/extras/recovery_pipeline.py)",
            "output": "every event emitted with its key's running sum",
        },
        "definitions": {
            "end_to_end_events_per_second": "events / wall time from job submission to completion (SparkSession already running; ours includes launching the barrier stage of fresh Python workers and the end-of-input checkpoint)",
            "processing_events_per_second": "ours: events / (last record at sink - first record at sink); Spark SS: events / summed micro-batch triggerExecution",
            "checkpoint_overhead": "1 - with/without, medians over the repeats",
            "cpu_seconds": "CPU time used during a run by: the worker processes (sampled every 10 ms), the driver process, the Spark JVM, the S3 server; less sensitive than wall time to other load on the machine",
            "without_checkpoints": "no periodic checkpoint; the driver's end-of-input checkpoint still runs (as in the run with checkpoints)",
            "sustained": "the same job on more events, so that the overhead is measured over many 1 s checkpoint intervals (W1's own processing lasts about one interval)",
            "checkpoint_duration": "trigger -> completed (all acks, _metadata written to S3), periodic checkpoints of all runs with checkpoints",
            "targets_judged_on": "the least favourable of the measurements (throughput: both measures; overhead: every series and measure)",
        },
        "setup": {
            "spark_master": f"local[{args.parallelism}]",
            "checkpoint_mode": "exactly-once (aligned barriers), interval 1 s, state to the embedded SeaweedFS S3 server",
            "repeats": args.repeats,
            "run_order": "without/with checkpoints alternated ABBA (without, with, with, without, ...)",
        },
        "ours": ours,
        "checkpoint_duration_seconds": {
            "count": len(durations),
            "p50": rounded(percentile(durations, 50), 4),
            "p99": rounded(percentile(durations, 99), 4),
            "max": rounded(max(durations), 4) if durations else None,
        },
        "checkpoint_alignment_seconds": {
            "p50": rounded(percentile(alignments, 50), 4),
            "p99": rounded(percentile(alignments, 99), 4),
        },
        "checkpoint_overhead": overheads,
        "recovery": recovery,
        "spark_structured_streaming": ss,
    }
    report["targets"] = targets(ours["w1"], overheads, recovery, ss)
    report["environment"] = {
        "cpus": os.cpu_count(),
        "loadavg_start": bench.loads[0] if bench.loads else None,
        "loadavg_after_each_run": bench.loads[1:],
        "loadavg_end": loadavg(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pyarrow": pa.__version__,
        "pyspark": pyspark_version(),
        "note": "2 cores shared with other workloads; load average is the 1/5/15-minute average",
    }
    return report


def targets(
    w1: dict[str, Any],
    overheads: dict[str, float],
    recovery: dict[str, Any] | None,
    ss: dict[str, Any] | None,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if ss is not None:
        ratios = {
            m: round(
                w1["with_checkpoints"][f"{m}_events_per_second"] / ss[f"{m}_events_per_second"], 3
            )
            for m in MEASURES
        }
        worst = min(ratios.values())
        ours_start = statistics.median(r["startup_seconds"] for r in w1["with_checkpoints"]["runs"])
        ss_start = statistics.median(
            r["wall_seconds"] - r["trigger_execution_seconds"] for r in ss["runs"]
        )
        out["throughput_vs_spark_ss"] = {
            "target": ">= 1.0 (ours with exactly-once checkpoints / Spark SS)",
            "ratios": ratios,
            "judged": worst,
            "met": worst >= 1.0,
            "met_per_measure": {m: r >= 1.0 for m, r in ratios.items()},
            "fixed_startup_seconds": {
                "ours_submission_to_first_record_at_sink": rounded(ours_start, 3),
                "spark_ss_wall_minus_trigger_execution": rounded(ss_start, 3),
            },
        }
    worst_overhead = max(overheads.values())
    out["checkpoint_overhead"] = {
        "target": "<= 0.05",
        "overheads": overheads,
        "judged": worst_overhead,
        "met": worst_overhead <= 0.05,
        "met_per_measure": {m: o <= 0.05 for m, o in overheads.items()},
        "w1_median_processing_seconds_with_checkpoints": statistics.median(
            r["processing_seconds"] for r in w1["with_checkpoints"]["runs"]
        ),
    }
    if recovery is not None:
        seconds = recovery.get("seconds")
        out["recovery_seconds"] = {
            "target": "<= 10",
            "judged": seconds,
            "met": seconds is not None and seconds <= 10,
        }
    return out


def pyspark_version() -> str:
    import pyspark  # noqa: PLC0415

    return str(pyspark.__version__)


loadavg = machine.loadavg
