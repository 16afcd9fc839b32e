"""Checkpoint overhead of W1 and W2 with the two runs at the same time, so the machine's drift cancels.

    PYTHONPATH=runtime/src:bench .venv/bin/python -m cjob_bench run simultaneous [--workloads W1,W2] [--pairs 3] [--seconds 60]

The suite's long runs (``run W1,W2 --long``) measure the overhead of
checkpoints every 1 s as ``1 - with / without`` over runs back to back; on a
shared machine two identical runs differ by much more than the few percent
being measured. Here each pair submits the job with checkpoints every 1 s
and the job without periodic checkpoints together, on one warm SparkSession
with a slot for each of their workers (``local[2P]``), on the same files
(the suite's generated events, hard-linked ``copies`` times so that the window
in which both jobs process lasts at least ``--seconds``), and compares the
records their sinks wrote per second over that common window
(:mod:`cjob_bench.harness.simultaneous`, which says what the figure leaves
out and what it counts twice, and the bound it gives). Every run's answer is checked.
The two jobs share the machine's cores, so each runs at about half of its
speed alone; start-up and the final checkpoint are outside the window.

Prints one JSON document on stdout (``--output`` saves it too); progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

from cjob_bench.harness import bytecode, machine, simultaneous
from cjob_bench.harness import runs as harness
from cjob_bench.workloads import data
from cjob_bench.workloads import files_ours as ours

MARGIN = 2.0
"""Seconds left out at each end of the common window (simultaneous.compare's default)."""
SLACK = 1.35
"""Copies for this much more than ``--seconds``: one copy of the base files takes less time in a
long run than in the calibration pair (measured: W1 1.3 s against 1.7 s), and each job's
start and end fall outside the common window."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workloads", default="W1,W2", help="comma-separated: W1, W2")
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--seconds", type=float, default=60.0, help="shortest common window")
    p.add_argument("--events", type=int, default=10_000_000)
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--files", type=int, default=8)
    p.add_argument("--parallelism", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=65_536)
    p.add_argument("--record-batch-size", type=int, default=8192)
    p.add_argument("--driver-memory", default="4g")
    p.add_argument("--output", default=None, help="also save the JSON here")
    ns = p.parse_args(argv)
    ns.workloads = [w.strip().upper() for w in ns.workloads.split(",") if w.strip()]
    unknown = set(ns.workloads) - {"W1", "W2"}
    if unknown:
        p.error(f"unknown workloads {sorted(unknown)}: W1 and W2 have a sink with a timeline")
    return ns


def measure(ns: argparse.Namespace, work: pathlib.Path) -> dict[str, Any]:
    log = harness.log
    dataset = data.generate(work / "data", events=ns.events, keys=ns.keys, files=ns.files, seed=1)
    doc: dict[str, Any] = {
        "benchmark": "checkpoint overhead, with and without checkpoints at the same time",
        "machine": machine.describe(),
        "parallelism": ns.parallelism,
        "spark_master": f"local[{2 * ns.parallelism}]",
        "margin_seconds": MARGIN,
        "workloads": {},
    }
    with harness.spark_and_s3(
        f"local[{2 * ns.parallelism}]",
        app_name="simultaneous-overhead",
        parallelism=ns.parallelism,
        bucket=ours.BUCKET,
        conf={"spark.driver.memory": ns.driver_memory},
    ) as (spark, s3):
        o = ours.Ours(
            spark,
            s3,
            ns.parallelism,
            ns.batch_size,
            ns.record_batch_size,
            work,
            sink_timeline=True,
        )
        log("warm-up (not counted): a W1 pair on the base files")
        simultaneous.run_pair(o, "W1", dataset, compared=False)
        for workload in ns.workloads:
            doc["workloads"][workload] = pairs_of(o, workload, dataset, ns, work)
    return doc


def pairs_of(
    o: ours.Ours,
    workload: str,
    dataset: data.DataSet,
    ns: argparse.Namespace,
    work: pathlib.Path,
) -> dict[str, Any]:
    """A calibration pair on the base files, then ``--pairs`` pairs on enough copies."""
    log = harness.log
    base = simultaneous.run_pair(o, workload, dataset, compared=False)
    per_copy = max(r.get("processing_window_seconds", 0.0) for r in base["runs"].values()) or 1.0
    copies = max(2, math.ceil((ns.seconds + 2 * MARGIN) * SLACK / per_copy))
    big = dataset.replicated(work / f"copies-{workload}", copies)
    log(f"{workload}: {per_copy:.1f} s a copy side by side, {copies} copies, {big.events:,} events")
    pairs = []
    for i in range(ns.pairs):
        pair = simultaneous.run_pair(o, workload, big)
        pairs.append(pair)
        log(
            f"{workload} pair {i}: {pair['window_seconds']:.0f} s window, overhead "
            f"{pair['overhead']:.2%}, S3 server {pair.get('s3_server_share_of_machine', 0):.2%}"
        )
    overheads = [p["overhead"] for p in pairs]
    bounds = [p["overhead_bound"] for p in pairs if "overhead_bound" in p]
    return {
        "events": big.events,
        "copies_of_the_files": copies,
        "pairs": pairs,
        "every_answer_correct": all(
            r["correct"]["equal"] for p in pairs for r in p["runs"].values()
        ),
        "shortest_window_seconds": min(p["window_seconds"] for p in pairs),
        "every_window_lasted_seconds": min(p["window_seconds"] for p in pairs) >= ns.seconds,
        "overheads": [round(x, 4) for x in overheads],
        "overhead_median": round(statistics.median(overheads), 4),
        "overhead_bounds": [round(x, 4) for x in bounds],
        "overhead_bound_median": round(statistics.median(bounds), 4) if bounds else None,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ns = parse_args(argv)
    bytecode.use_bytecode_cache()
    work = pathlib.Path(tempfile.mkdtemp(prefix="simultaneous-"))
    started = time.time()
    try:
        doc = measure(ns, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    doc["wall_seconds"] = round(time.time() - started, 1)
    text = json.dumps(doc, indent=2)
    if ns.output:
        pathlib.Path(ns.output).write_text(text + "\n")
    print(text)
    for workload, result in doc["workloads"].items():
        print(
            f"{workload}: overhead per pair {result['overheads']}, median "
            f"{result['overhead_median']:.2%}; with the S3 server's share (a bound) "
            f"{result['overhead_bounds']}, median {result['overhead_bound_median']:.2%}",
            file=sys.stderr,
        )
    return doc


if __name__ == "__main__":
    main()
