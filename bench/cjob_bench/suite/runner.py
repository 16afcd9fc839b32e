"""The suite's run order: one data set, one SparkSession, interleaved repeats, one JSON document.

Per repeat and workload every system runs once, in an order that reverses
every other repeat (ours, peer, …, peer, ours): slow drift of the machine
then biases no system. A failed run is recorded with its error and left out
of the medians; the rest of the suite goes on.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from barrier_runtime.spark import session
from barrier_runtime.storage.embedded import EmbeddedS3Server
from cjob_bench.suite import bytewax_peer, data, machine, ours, report, spark_peer

Run = Callable[[], dict[str, Any]]
W4 = pathlib.Path(__file__).resolve().parents[2] / "w4_latency.py"
SIMULTANEOUS = W4.with_name("simultaneous_overhead.py")


WORKLOADS = ("W1", "W2", "W3", "W3v")
"""The suite's own workloads, in the order they run (W4 is ``bench/w4_latency.py``)."""


def log(message: str) -> None:
    print(f"[suite {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def s3_credentials(server: EmbeddedS3Server) -> Iterator[None]:
    """Credentials in the environment before Spark starts: the executors inherit it."""
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    os.environ["AWS_ACCESS_KEY_ID"] = server.access_key
    os.environ["AWS_SECRET_ACCESS_KEY"] = server.secret_key
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def attempt(label: str, run: Run) -> dict[str, Any]:
    try:
        result = run()
    except Exception as exc:  # one failed run must not lose the others
        log(f"{label}: FAILED {exc!r}")
        return {"error": repr(exc), "traceback": traceback.format_exc()[-2000:]}
    brief = {
        k: result.get(k) for k in ("wall_seconds", "events_per_second", "processing_window_seconds")
    }
    log(f"{label}: {brief} correct={result['correct']['equal']}")
    return result


def systems_for(
    workload: str, ns: Any, o: ours.Ours, dataset: data.DataSet, work: pathlib.Path
) -> dict[str, Run]:
    runs: dict[str, Run] = {
        "ours/checkpoints_1s": lambda: o.run(workload, dataset, interval=1.0),
        "ours/no_periodic_checkpoints": lambda: o.run(workload, dataset, interval=None),
    }
    if "spark" in ns.peers:
        for mode in ns.spark_modes:
            runs[f"spark_ss/{mode}"] = functools.partial(
                spark_peer.run, o.spark, data.peer_workload(workload), dataset, mode, work
            )
    if "bytewax" in ns.peers and workload in ("W2", "W3"):
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
        "suite": "bench/suite.py",
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
        log(
            f"generated {ns.events:,} events in {ns.files} Parquet + {ns.files} JSON-lines files in {time.monotonic() - started:.1f}s"
        )
        with EmbeddedS3Server(buckets=[ours.BUCKET]) as s3, s3_credentials(s3):
            spark = session.build_session(
                f"local[{ns.parallelism}]",
                app_name="suite",
                parallelism=ns.parallelism,
                conf={"spark.driver.memory": ns.driver_memory},
            )
            spark.conf.set("spark.sql.shuffle.partitions", str(ns.parallelism))
            try:
                o = ours.Ours(spark, s3, ns.parallelism, ns.batch_size, ns.record_batch_size, work)
                if ns.warmup:
                    log("warm-up (not counted): ours W1, Spark SS W1 available_now")
                    attempt("warm-up ours", lambda: o.run("W1", dataset, interval=None))
                if ns.warmup and "spark" in ns.peers:
                    attempt(
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
                        if w in ("W1", "W2")
                    }
            finally:
                spark.stop()
    if "W4" in ns.only:
        doc["workloads"]["W4"] = w4()
    together = [w for w in workloads if w in ("W1", "W2")]
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
        order = list(systems) if i % 2 == 0 else list(reversed(systems))
        for name in order:
            runs[name].append(attempt(f"{workload} #{i} {name}", systems[name]))
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
    log(f"long {workload}: {copies} copies, {big.events:,} events")
    runs: dict[str, list[dict[str, Any]]] = {
        "ours/checkpoints_1s": [],
        "ours/no_periodic_checkpoints": [],
    }
    for i in range(ns.long_repeats):
        order = list(runs) if i % 2 == 0 else list(reversed(runs))
        for name in order:
            interval = 1.0 if name.endswith("1s") else None
            runs[name].append(
                attempt(
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
    """``bench/w4_latency.py`` (written separately) when it exists: its JSON, as it printed it."""
    return bench_script(W4, [])


def simultaneous_overhead(ns: Any, workloads: list[str]) -> dict[str, Any]:
    """``bench/simultaneous_overhead.py`` on the suite's events, ``--long-repeats`` pairs."""
    args = ["--workloads", ",".join(workloads), "--pairs", str(ns.long_repeats)]
    args += ["--seconds", str(ns.long_seconds), "--events", str(ns.events), "--keys", str(ns.keys)]
    args += ["--files", str(ns.files), "--parallelism", str(ns.parallelism)]
    args += ["--batch-size", str(ns.batch_size), "--record-batch-size", str(ns.record_batch_size)]
    return bench_script(SIMULTANEOUS, args)


def bench_script(script: pathlib.Path, args: list[str]) -> dict[str, Any]:
    """Another benchmark of ``bench/``, in its own process: its JSON, as it printed it."""
    if not script.exists():
        return {"skipped": f"{script.name} not present"}
    log(f"running bench/{script.name} {' '.join(args)}")
    started = time.time()
    done = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
    )
    if done.returncode != 0:
        return {"error": f"exit {done.returncode}", "stderr": done.stderr[-2000:]}
    return {"wall_seconds": round(time.time() - started, 3), "result": json.loads(done.stdout)}


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
