"""W1, W2, W3 and W3v: the file suite, one data set and one SparkSession for all four.

The workloads (pipeline file :mod:`.files_pipeline`, data :mod:`.data`):

* **W1** vectorised keyed sum: Parquet → ``key_by("by-key", "key").sum(...)``;
* **W2** per-record keyed running count with a Python function
  (``key_by(lambda r: r["key"]).stateful_map(...)``);
* **W3** JSON lines → parse → filter → keyed count → file sink;
* **W3v** W3 written with batch functions (the peers run their W3).

Systems: ours (:mod:`cjob_bench.workloads.files_ours`), Spark Structured Streaming
(:mod:`cjob_bench.peers.spark`), Bytewax (:mod:`cjob_bench.peers.bytewax`),
run in the harness's interleaved order (:mod:`cjob_bench.harness.runs`); a
failed run is recorded with its error and left out of the medians. Every
run's final per-key answer is checked (:mod:`cjob_bench.harness.answers`).
"""

from __future__ import annotations

import datetime
import functools
import math
import pathlib
import statistics
import time
from collections.abc import Callable
from typing import Any

from cjob_bench.harness import machine, report
from cjob_bench.harness import runs as harness
from cjob_bench.peers import bytewax as bytewax_peer
from cjob_bench.peers.spark import files as spark_peer
from cjob_bench.workloads import FILE_WORKLOADS, data
from cjob_bench.workloads import files_ours as ours

Run = Callable[[], dict[str, Any]]
W4 = "cjob_bench.workloads.w4"
SIMULTANEOUS = "cjob_bench.extras.simultaneous_overhead"


WORKLOADS = tuple(FILE_WORKLOADS)
"""The suite's own workloads, in the order they run (W4 is :mod:`cjob_bench.workloads.w4`)."""


def systems_for(
    workload: str, ns: Any, o: ours.Ours, dataset: data.DataSet, work: pathlib.Path
) -> dict[str, Run]:
    spec = FILE_WORKLOADS[workload]
    runs: dict[str, Run] = {
        "ours/checkpoints_1s": lambda: o.run(workload, dataset, interval=1.0),
        "ours/no_periodic_checkpoints": lambda: o.run(workload, dataset, interval=None),
    }
    if "spark" in ns.peers:
        for mode in ns.spark_modes:
            runs[f"spark_ss/{mode}"] = functools.partial(
                spark_peer.run, o.spark, spec.peers_run, dataset, mode, work
            )
    if "bytewax" in ns.peers and spec.bytewax:
        runs["bytewax/2_processes_recovery_1s"] = lambda: bytewax_peer.run(
            workload, dataset, work, processes=ns.parallelism, batch_size=ns.record_batch_size
        )
    return runs


def run_suite(
    ns: Any, work: pathlib.Path, save: Callable[[dict[str, Any]], None] | None = None
) -> dict[str, Any]:
    """The whole suite; ``save`` gets the document so far after each workload (partial results)."""
    workloads = [w for w in WORKLOADS if w in ns.only]
    doc: dict[str, Any] = {
        "suite": "python -m cjob_bench run W1,W2,W3,W3v",
        "date_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine.describe(),
        "config": {k: v for k, v in vars(ns).items() if k not in ("output",)},
        "definitions": DEFINITIONS,
        "workloads": {},
    }
    if workloads:
        started = time.monotonic()
        dataset = data.generate(
            work / "data", events=ns.events, keys=ns.keys, files=ns.files, seed=ns.seed
        )
        harness.log(
            f"generated {ns.events:,} events in {ns.files} Parquet + {ns.files} JSON-lines files in {time.monotonic() - started:.1f}s"
        )
        with harness.spark_and_s3(
            f"local[{ns.parallelism}]",
            app_name="suite",
            parallelism=ns.parallelism,
            bucket=ours.BUCKET,
            conf={"spark.driver.memory": ns.driver_memory},
            shuffle_partitions=ns.parallelism,
        ) as (spark, s3):
            o = ours.Ours(spark, s3, ns.parallelism, ns.batch_size, ns.record_batch_size, work)
            if ns.warmup:
                harness.log("warm-up (not counted): ours W1, Spark SS W1 available_now")
                harness.attempt("warm-up ours", lambda: o.run("W1", dataset, interval=None))
            if ns.warmup and "spark" in ns.peers:
                harness.attempt(
                    "warm-up spark",
                    lambda: spark_peer.run(spark, "W1", dataset, "available_now", work),
                )
            for w in workloads:
                doc["workloads"][w] = measure(w, ns, o, dataset, work)
                if save is not None:
                    save({**doc, "partial": True})
            if ns.long:
                doc["long_runs"] = {
                    w: long_runs(w, ns, o, dataset, doc["workloads"][w], work)
                    for w in workloads
                    if FILE_WORKLOADS[w].long_runs
                }
    if "W4" in ns.only:
        doc["workloads"]["W4"] = w4()
    together = [w for w in workloads if FILE_WORKLOADS[w].long_runs]
    if ns.simultaneous and together:
        doc["simultaneous_overhead"] = simultaneous_overhead(ns, together)
    doc["machine"]["loadavg_at_end"] = machine.loadavg()
    return doc


def measure(
    workload: str, ns: Any, o: ours.Ours, dataset: data.DataSet, work: pathlib.Path
) -> dict[str, Any]:
    systems = systems_for(workload, ns, o, dataset, work)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in systems}
    for i in range(ns.repeats):
        for name in harness.interleaved(list(systems), i):
            runs[name].append(harness.attempt(f"{workload} #{i} {name}", systems[name]))
    summary = {name: {**report.summarize(r), "all_runs": r} for name, r in runs.items()}
    return {
        "events": dataset.events,
        "systems": summary,
        "checkpoint_overhead": report.overhead(
            summary["ours/checkpoints_1s"], summary["ours/no_periodic_checkpoints"]
        ),
        "ratios": report.ratios(summary),
    }


def long_runs(
    workload: str,
    ns: Any,
    o: ours.Ours,
    dataset: data.DataSet,
    short: dict[str, Any],
    work: pathlib.Path,
) -> dict[str, Any]:
    """Ours with and without checkpoints on the files hard-linked until a run lasts >= ``--long-seconds``."""
    # processing time grows with the copies, start-up does not: scale by the processing window
    base = short["systems"]["ours/checkpoints_1s"]
    seconds = base.get("processing_window_seconds_median") or base.get("wall_seconds_median") or 1.0
    copies = max(2, math.ceil(ns.long_seconds * 1.1 / seconds))
    big = dataset.replicated(work / f"long-{workload}", copies)
    harness.log(f"long {workload}: {copies} copies, {big.events:,} events")
    runs: dict[str, list[dict[str, Any]]] = {
        "ours/checkpoints_1s": [],
        "ours/no_periodic_checkpoints": [],
    }
    for i in range(ns.long_repeats):
        for name in harness.interleaved(list(runs), i):
            interval = 1.0 if name.endswith("1s") else None
            runs[name].append(
                harness.attempt(
                    f"long {workload} #{i} {name}",
                    functools.partial(o.run, workload, big, interval=interval),
                )
            )
    summary = {name: {**report.summarize(r), "all_runs": r} for name, r in runs.items()}
    pairs = report.paired_overheads(
        runs["ours/checkpoints_1s"], runs["ours/no_periodic_checkpoints"]
    )
    walls = [r["wall_seconds"] for rs in runs.values() for r in rs if "wall_seconds" in r]
    return {
        "events": big.events,
        "shortest_run_seconds": min(walls, default=None),
        "every_run_lasted_long_seconds": bool(walls) and min(walls) >= ns.long_seconds,
        "copies_of_the_files": copies,
        "systems": summary,
        "checkpoint_overhead": report.overhead(
            summary["ours/checkpoints_1s"], summary["ours/no_periodic_checkpoints"]
        ),
        "checkpoint_overhead_per_repeat": pairs,
        "checkpoint_overhead_median_of_repeats": statistics.median(pairs) if pairs else None,
    }


def w4() -> dict[str, Any]:
    """W4 (:mod:`cjob_bench.workloads.w4`, its own process): its JSON, as it printed it."""
    return harness.bench_script(W4, [])


def simultaneous_overhead(ns: Any, workloads: list[str]) -> dict[str, Any]:
    """:mod:`cjob_bench.extras.simultaneous_overhead` on the suite's events, ``--long-repeats`` pairs."""
    args = ["--workloads", ",".join(workloads), "--pairs", str(ns.long_repeats)]
    args += ["--seconds", str(ns.long_seconds), "--events", str(ns.events), "--keys", str(ns.keys)]
    args += ["--files", str(ns.files), "--parallelism", str(ns.parallelism)]
    args += ["--batch-size", str(ns.batch_size), "--record-batch-size", str(ns.record_batch_size)]
    return harness.bench_script(SIMULTANEOUS, args)


DEFINITIONS = {
    "events_per_second": "events / end-to-end wall time. Ours: from job submission on the warm SparkSession to completion "
    "(worker start-up, source I/O and the final checkpoint included). Spark SS stream/available_now: from query start "
    "on the warm session to the last input row processed (stream) or termination (available_now). Spark SS cold and "
    "Bytewax: from process launch to exit.",
    "processing_window_seconds": "ours: first to last write at the sink (no start-up, no final checkpoint); Spark SS: "
    "summed triggerExecution of the micro-batches with input. Labelled, not the headline.",
    "checkpoint_overhead": "1 - median events/s with checkpoints every 1 s / median events/s without periodic checkpoints",
    "checkpoint_overhead_per_repeat": "long runs: 1 - with / without for the two runs of each repeat, which ran back "
    "to back (a drift of the machine over the repeats cancels within a repeat); its median is the paired estimate",
    "correct": "the final per-key answer (W1 sum, W2 count, W3 and W3v count of kind=buy) of the run equals the exact one for every key",
    "W3v": "W3 written with batch functions (map_batches filter, vectorised keyed sum of ones), the same records to the "
    "same file sink; the peers run their W3 on the same files",
    "medians": "of --repeats interleaved repeats; the order of systems reverses every other repeat",
}
