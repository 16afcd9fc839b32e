"""``python -m cjob_bench nexmark``: generate Nexmark events as files, run queries in-process.

``generate`` writes the events of a :class:`~.config.NexmarkConfig` (every
parameter an option) under ``--out`` (:mod:`.files`); ``local`` runs queries
over them on the in-process executor with exactly-once checkpoints
(:mod:`.local`), checks each against the oracle with ``--check``; ``crashes``
runs one query many times under random crash plans (:mod:`.crashes`);
``kafka-sustain`` and ``kafka-latency`` run a query live on a real Kafka broker
(:mod:`.kafka.cli`); ``cpu-cost`` measures the CPU time of ``cjob run`` with and
without checkpoints (:mod:`.cpu_cost`); ``spark`` runs the queries on Spark
Structured Streaming (:mod:`.spark`); ``table`` measures the README's table, both
systems per query (:mod:`.table`). Each prints one JSON document.

>>> parser().parse_args(["generate", "--out", "/tmp/x", "--events", "10"]).events
10
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

from cjob_bench.nexmark import cpu_cost, crashes, files, local, queries, table
from cjob_bench.nexmark.config import NexmarkConfig
from cjob_bench.nexmark.kafka import cli as kafka_cli


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m cjob_bench nexmark", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="write Nexmark events as Parquet files")
    gen.add_argument("--out", required=True, type=pathlib.Path)
    gen.add_argument("--chunk", type=int, default=100_000, help="events per row group")
    for field in dataclasses.fields(NexmarkConfig):
        default = field.default
        gen.add_argument(
            "--" + field.name.replace("_", "-"),
            type=int,
            default=default,
            help=f"(default {default})",
        )
    run = sub.add_parser("local", help="run queries in-process over generated events")
    run.add_argument("--data", required=True, type=pathlib.Path)
    run.add_argument("--queries", default=",".join(queries.QUERIES))
    run.add_argument("--parallelism", type=int, default=2)
    run.add_argument("--interval", type=float, default=1.0, help="checkpoint interval (s)")
    run.add_argument("--batch-size", type=int, default=8_192)
    run.add_argument("--check", action="store_true", help="compare with the oracle")
    run.add_argument("--work", type=pathlib.Path, default=None, help="store and output (temp)")
    stress = sub.add_parser("crashes", help="run one query many times under random crashes")
    stress.add_argument("--data", required=True, type=pathlib.Path)
    stress.add_argument("--query", required=True, choices=queries.QUERIES)
    stress.add_argument("--runs", type=int, default=100)
    stress.add_argument("--seed", type=int, default=0)
    kafka_cli.add_parsers(sub)
    table.add_parser(sub)
    cost = sub.add_parser("cpu-cost", help="CPU time of cjob run with and without checkpoints")
    cost.add_argument("--data", type=pathlib.Path, help="Nexmark events (not for W2)")
    cost.add_argument("--query", required=True, choices=(*queries.QUERIES, "W2"))
    cost.add_argument("--events", type=int, default=2_000_000, help="W2's, generated")
    cost.add_argument("--repeats", type=int, default=3)
    cost.add_argument("--parallelism", type=int, default=2)
    cost.add_argument(
        "--intervals",
        default="1",
        help="checkpoint intervals (s, comma-separated), each a variant beside the one "
        "without periodic checkpoints",
    )
    cost.add_argument("--no-check", action="store_true", help="skip the oracle check")
    peer = sub.add_parser("spark", help="run queries on Spark Structured Streaming")
    peer.add_argument("--data", required=True, type=pathlib.Path)
    peer.add_argument("--queries", default=",".join(queries.QUERIES))
    peer.add_argument("--parallelism", type=int, default=2)
    peer.add_argument("--check", action="store_true", help="compare with the oracle")
    peer.add_argument(
        "--keep-output",
        type=pathlib.Path,
        default=None,
        help="keep each query's committed output here and do not read it back in this "
        "process (a CPU measurement of it then counts the query alone)",
    )
    return top


def main(argv: Sequence[str] | None = None) -> Any:
    ns = parser().parse_args(argv)
    if ns.command.startswith("kafka-"):
        return kafka_cli.main(ns)
    if ns.command == "generate":
        cfg = NexmarkConfig(
            **{f.name: getattr(ns, f.name) for f in dataclasses.fields(NexmarkConfig)}
        )
        rows = files.write(cfg, ns.out, chunk=ns.chunk)
        doc: Any = {"out": str(ns.out), "rows": rows, "config": dataclasses.asdict(cfg)}
    elif ns.command == "table":
        doc = table.main(ns)
    elif ns.command == "crashes":
        with tempfile.TemporaryDirectory(prefix="nexmark-crashes-") as temp:
            bad = crashes.stress(ns.query, ns.data, pathlib.Path(temp), runs=ns.runs, seed=ns.seed)
        doc = {"query": ns.query, "runs": ns.runs, "differing": len(bad), "runs_that_differ": bad}
    elif ns.command == "cpu-cost":
        with tempfile.TemporaryDirectory(prefix="nexmark-cpu-") as temp:
            doc = _cpu_cost(ns, pathlib.Path(temp))
    elif ns.command == "spark":
        from cjob_bench.nexmark.spark import cli as spark_cli  # noqa: PLC0415 (pyspark)

        doc = spark_cli.run(
            ns.data,
            ns.queries,
            parallelism=ns.parallelism,
            check=ns.check,
            keep_output=ns.keep_output,
        )
    else:
        doc = _local(ns)
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return doc


def _local(ns: argparse.Namespace) -> list[dict[str, Any]]:
    results = []
    with tempfile.TemporaryDirectory(prefix="nexmark-") as temp:
        work = ns.work or pathlib.Path(temp)
        for query in [q.strip() for q in ns.queries.split(",") if q.strip()]:
            done = local.run(
                query,
                ns.data,
                work,
                parallelism=ns.parallelism,
                interval=ns.interval,
                batch_size=ns.batch_size,
            )
            summary = done.summary()
            if ns.check:
                summary["equal"], summary["check"] = local.check(done, ns.data)
            print(json.dumps(summary), file=sys.stderr)
            results.append(summary)
    return results


def _cpu_cost(ns: argparse.Namespace, temp: pathlib.Path) -> dict[str, Any]:
    if ns.query == "W2":
        job = cpu_cost.w2_job(temp / "w2-data", events=ns.events)
    elif ns.data is None:
        raise SystemExit("cpu-cost: --data is required for a Nexmark query")
    else:
        job = cpu_cost.nexmark_job(ns.query, ns.data.resolve(), check=not ns.no_check)
    return cpu_cost.measure(
        job,
        temp,
        repeats=ns.repeats,
        parallelism=ns.parallelism,
        intervals=tuple(float(i) for i in ns.intervals.split(",") if i.strip()),
    )
