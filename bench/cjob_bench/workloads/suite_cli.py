"""The benchmark suite: ours against Spark Structured Streaming and Bytewax on the same files.

    PYTHONPATH=runtime/src:bench .venv/bin/python -m cjob_bench run W1,W2,W3,W3v [--peers spark,bytewax] [--events 10000000] [--repeats 3] [--long] [--simultaneous]

Generates the events once (Parquet and JSON lines, ``--files`` files each),
then runs W1 (vectorised keyed sum), W2 (per-record keyed running count in
Python), W3 (JSON lines → filter → keyed count → file sink) and W3v (W3 written
with batch functions; the peers run their W3) on our runtime
(local Spark, P=2, checkpoints every 1 s to an embedded S3 server, and without
periodic checkpoints), on Spark Structured Streaming (streaming cadence warm
and cold, and ``availableNow``) and on Bytewax (W2, W3; two processes,
recovery every 1 s); ``--only`` with W4 also runs W4 (:mod:`.w4`) in its own process.
``--simultaneous`` adds :mod:`cjob_bench.extras.simultaneous_overhead`: the checkpoint
overhead of W1 and W2 with and without checkpoints running at the same time.
Every run's answer is checked. Prints one JSON document on stdout, a table
on stderr, and saves the JSON as ``bench/results/<date>.json``. See
:mod:`.files` and the ``definitions`` in the JSON.
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import shutil
import sys
import tempfile
from typing import Any

from cjob_bench.harness import bytecode, report
from cjob_bench.workloads import files as runner

RESULTS = pathlib.Path(__file__).resolve().parents[2] / "results"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=10_000_000)
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument(
        "--files", type=int, default=8, help="files per format (partitions of our FileSource)"
    )
    p.add_argument("--parallelism", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--batch-size",
        type=int,
        default=65_536,
        help="our FileSource batch size for W1 (vectorised)",
    )
    p.add_argument(
        "--record-batch-size",
        type=int,
        default=8192,
        help="records per source batch in the per-record workloads W2 and W3, ours and Bytewax",
    )
    p.add_argument("--only", default="W1,W2,W3,W3v,W4", help="comma-separated workloads")
    p.add_argument("--peers", default="spark,bytewax", help="comma-separated peers ('' for none)")
    p.add_argument(
        "--spark-modes", default="stream,available_now,cold", help="Spark SS variants to run"
    )
    p.add_argument(
        "--no-warmup", dest="warmup", action="store_false", help="skip the uncounted warm-up runs"
    )
    p.add_argument(
        "--long",
        action="store_true",
        help="also W1, W2 ours with/without checkpoints, runs >= --long-seconds",
    )
    p.add_argument("--long-seconds", type=float, default=60.0)
    p.add_argument(
        "--long-repeats",
        type=int,
        default=5,
        help="interleaved repeats of the long runs (their overhead is a few %%, the noise as much)",
    )
    p.add_argument(
        "--simultaneous",
        action="store_true",
        help="also `run simultaneous`: W1, W2 overhead with both variants running at "
        "the same time, --long-repeats pairs of >= --long-seconds",
    )
    p.add_argument(
        "--driver-memory", default="4g", help="the Spark driver JVM's heap (all systems share it)"
    )
    p.add_argument(
        "--output",
        default=None,
        help="where to save the JSON (default bench/results/<date>.json; '-' not saved)",
    )
    ns = p.parse_args(argv)
    names = {w.upper(): w for w in (*runner.WORKLOADS, "W4")}
    ns.only = [names.get(w.strip().upper(), w.strip()) for w in ns.only.split(",") if w.strip()]
    ns.spark_modes = [x.strip() for x in ns.spark_modes.split(",") if x.strip()]
    ns.peers = [x.strip() for x in ns.peers.split(",") if x.strip()]
    return ns


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ns = parse_args(argv)
    bytecode.use_bytecode_cache()
    path = None
    if ns.output != "-":
        today = datetime.datetime.now(datetime.UTC).date().isoformat()
        path = pathlib.Path(ns.output) if ns.output else RESULTS / f"{today}.json"
        path.parent.mkdir(parents=True, exist_ok=True)

    def save(doc: dict[str, Any]) -> None:
        if path is not None:
            path.write_text(json.dumps(doc, indent=2) + "\n")

    work = pathlib.Path(tempfile.mkdtemp(prefix="suite-"))
    try:
        doc = runner.run_suite(ns, work, save)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    save(doc)
    print(json.dumps(doc, indent=2))
    print(report.table(doc["workloads"]), file=sys.stderr)
    if doc.get("long_runs"):
        long = {f"{w}-long": v for w, v in doc["long_runs"].items()}
        print(report.table(long), file=sys.stderr)
    together = doc.get("simultaneous_overhead", {}).get("result", {}).get("workloads", {})
    for workload, result in together.items():
        overheads = ", ".join(f"{x:.1%}" for x in result["overheads"])
        print(
            f"{workload} overhead, both variants at the same time: {overheads}; "
            f"median {result['overhead_median']:.1%}",
            file=sys.stderr,
        )
    if path is not None:
        print(f"saved {path}", file=sys.stderr)
    return doc


if __name__ == "__main__":
    main()
