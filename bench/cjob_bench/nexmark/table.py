"""``python -m cjob_bench nexmark table``: the README's Nexmark table, every figure from one run.

The method, fixed before any figure was seen. For each query, both systems at P = 2:

* **ours**: exactly-once aligned checkpoints every 1 s to the S3 server, transactional sinks;
* **Spark Structured Streaming**: micro-batches at a 1 s trigger, checkpointed to a local
  directory, its file sink (files) or its Kafka sink (at-least-once: it has no other).

1. **Sustainable throughput on Kafka**: ``kafka-sustain`` (:mod:`.kafka.method`: a rate is
   sustained when the lag stays within 5 s of input after a 20 s warm-up of a 60 s live feed
   and every output is committed; the search of revision 2), each search in a process of its
   own (its own broker, SparkSession and, for ours, S3 server), from the system's start rate.
   The two systems' order alternates from query to query, so a slow drift of the machine
   favours neither.
2. **CPU seconds per million events, on files**: the same Parquet events
   (``--cpu-events``, generated once) through each system end to end in a fresh process,
   every process's user + system time from ``/proc`` (:mod:`..harness.cpu`): ours is
   ``cjob run`` with its ``FileSink`` (:class:`.cpu_cost.Bench`, the S3 server's CPU
   added), Spark's is ``nexmark spark --keep-output`` (its file source and Parquet sink);
   divided by the events the query reads. Start-up is included, as a user pays it. One
   unmeasured warm-up run of each system comes first (page cache, bytecode).
3. **Equal**: both committed outputs of step 2 are compared with the oracle
   (:mod:`.reference`) after the runs, outside the measured processes; and every Kafka
   trial's verdict requires its committed output to be exactly what its sink took in.

The document holds every trial, every run and the table's rows (:func:`rows`);
:func:`markdown` renders them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from barrier_runtime.storage.embedded import EmbeddedS3Server
from cjob_bench.harness import bytecode, cpu, machine, runs
from cjob_bench.nexmark import cpu_cost, files, local, queries, reference
from cjob_bench.nexmark.config import NexmarkConfig

SYSTEMS = ("ours", "spark")
log = runs.logger("nexmark-table")


@dataclasses.dataclass(frozen=True, slots=True)
class Plan:
    """What one table run measures."""

    queries: list[str]
    work: pathlib.Path
    start_rates: dict[str, int]
    seconds: float = 60.0
    cpu_events: int = 5_000_000
    cpu_events_by_query: dict[str, int] = dataclasses.field(default_factory=dict)
    rates: list[int] | None = None
    """Exactly these rates instead of a search (tests)."""
    warm_up: bool = True
    keep_rows: bool = False
    """Keep every Kafka trial's committed rows under ``work`` (tests check them)."""


def add_parser(sub: Any) -> None:
    """Add ``table`` to the ``nexmark`` subcommands."""
    table = sub.add_parser("table", help="the README's Nexmark table in one run")
    table.add_argument("--queries", default=",".join(queries.QUERIES))
    table.add_argument("--start-rates", default="ours=40000,spark=20000", help="SYSTEM=R,...")
    table.add_argument("--seconds", type=float, default=60.0, help="input length of a trial")
    table.add_argument("--cpu-events", type=int, default=5_000_000, help="events of step 2")
    table.add_argument("--cpu-events-for", default="", help="QUERY=N,...: other sizes")
    table.add_argument("--rates", default=None, help="these rates, no search (tests)")
    table.add_argument("--no-warm-up", action="store_true")
    table.add_argument("--keep-rows", action="store_true", help="keep the trials' output")
    table.add_argument("--work", type=pathlib.Path, default=None, help="run files (temp)")
    table.add_argument("--out", type=pathlib.Path, default=None, help="also write the JSON")
    table.add_argument("--markdown", type=pathlib.Path, default=None, help="write the table")


def main(ns: argparse.Namespace) -> dict[str, Any]:
    """Run the table of ``ns``; its document (also to ``--out``, the table to
    ``--markdown``)."""
    with tempfile.TemporaryDirectory(prefix="nexmark-table-") as temp:
        work = ns.work or pathlib.Path(temp)
        work.mkdir(parents=True, exist_ok=True)
        plan = Plan(
            queries=[q.strip() for q in ns.queries.split(",") if q.strip()],
            work=work,
            start_rates={k: int(v) for k, v in _pairs(ns.start_rates).items()},
            seconds=ns.seconds,
            cpu_events=ns.cpu_events,
            cpu_events_by_query={k: int(v) for k, v in _pairs(ns.cpu_events_for).items()},
            rates=[int(r) for r in ns.rates.split(",")] if ns.rates else None,
            warm_up=not ns.no_warm_up,
            keep_rows=ns.keep_rows,
        )
        doc = measure(plan)
    if ns.out is not None:
        ns.out.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    if ns.markdown is not None:
        ns.markdown.write_text(markdown(doc["rows"]) + "\n")
    return doc


def _pairs(text: str) -> dict[str, str]:
    """``"a=1,b=2"`` as ``{"a": "1", "b": "2"}``.

    >>> _pairs("ours=40000, spark=20000"), _pairs("")
    ({'ours': '40000', 'spark': '20000'}, {})
    """
    items = [part.split("=", 1) for part in text.split(",") if part.strip()]
    return {k.strip(): v.strip() for k, v in items}


def measure(plan: Plan) -> dict[str, Any]:
    """Steps 1-3 of the module docstring; the whole document."""
    bytecode.use_bytecode_cache()
    started = time.time()
    sustain: dict[str, dict[str, Any]] = {}
    for i, query in enumerate(plan.queries):
        order = runs.interleaved(list(SYSTEMS), i)
        sustain[query] = {s: _sustain(plan, query, s) for s in order}
    cost = _cpu(plan)
    doc: dict[str, Any] = {
        "command": "nexmark table",
        "method": __doc__,
        "plan": {k: str(v) if isinstance(v, pathlib.Path) else v for k, v in vars_of(plan)},
        "machine": machine.describe(),
        "sustain": sustain,
        "cpu": cost,
    }
    doc["rows"] = rows(doc)
    doc["wall_seconds"] = round(time.time() - started, 1)
    return doc


def vars_of(plan: Plan) -> list[tuple[str, Any]]:
    return [(f.name, getattr(plan, f.name)) for f in dataclasses.fields(plan)]


def _sustain(plan: Plan, query: str, system: str) -> dict[str, Any]:
    """One ``kafka-sustain`` search in a process of its own; its document (or the error)."""
    out = plan.work / f"sustain-{query}-{system}.json"
    args = ["nexmark", "kafka-sustain", "--query", query, "--system", system]
    args += ["--seconds", repr(plan.seconds), "--out", str(out)]
    if plan.keep_rows:
        args += ["--keep-rows", "--work", str(plan.work / f"kafka-{query}-{system}")]
    if plan.rates is not None:
        args += ["--rates", ",".join(str(r) for r in plan.rates)]
    else:
        args += ["--start-rate", str(plan.start_rates[system])]
    log(f"{query} {system}: sustainable throughput ...")
    done = subprocess.run(
        [sys.executable, "-m", "cjob_bench", *args],
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=(plan.work / f"sustain-{query}-{system}.log").open("w"),
        check=False,
    )
    if done.returncode != 0 or not out.exists():
        return {"error": f"kafka-sustain exited {done.returncode}; see its log"}
    found: dict[str, Any] = json.loads(out.read_text())
    log(f"{query} {system}: {found.get('highest_sustained_rate')} events/s")
    return found


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(runs.BENCH), *sys.path]))
    return env


def _cpu(plan: Plan) -> dict[str, dict[str, Any]]:
    """Step 2 and 3 for every query: both systems' CPU runs over the same files, checked."""
    out: dict[str, dict[str, Any]] = {}
    with EmbeddedS3Server(buckets=[cpu_cost.BUCKET]) as s3:
        for i, query in enumerate(plan.queries):
            data = _events(plan, plan.cpu_events_by_query.get(query, plan.cpu_events))
            job = cpu_cost.nexmark_job(query, data)  # checked after each run
            ours = cpu_cost.Bench(job, plan.work, s3, intervals=(1.0,))
            measured: dict[str, Callable[[], dict[str, Any]]] = {
                "ours": lambda b=ours: b.run(cpu_cost.WITH),  # type: ignore[misc]
                "spark": lambda q=query, d=data: _spark_cpu(plan, q, d),  # type: ignore[misc]
            }
            if plan.warm_up and i == 0:
                for system, run in measured.items():
                    log(f"{system}: warm-up run (not measured)")
                    runs.attempt(f"{system} warm-up", run)
            out[query] = {}
            for system in runs.interleaved(list(SYSTEMS), i):
                result = runs.attempt(f"{query} {system} CPU", measured[system])
                out[query][system] = result
    return out


def _events(plan: Plan, events: int) -> pathlib.Path:
    """The Parquet events of ``events`` (generated once per size)."""
    data = plan.work / f"events-{events}"
    if not (data / "config.json").exists():
        log(f"generating {events} events ...")
        files.write(NexmarkConfig(events=events, generators=2), data)
    return data


def _spark_cpu(plan: Plan, query: str, data: pathlib.Path) -> dict[str, Any]:
    """Spark's run of ``query`` over ``data`` in a fresh process, its CPU time, checked."""
    name = f"spark-{query}-{time.monotonic_ns()}"
    keep = plan.work / name
    command = [sys.executable, "-m", "cjob_bench", "nexmark", "spark", "--data", str(data)]
    command += ["--queries", query, "--keep-output", str(keep)]
    done = cpu.JobCpu(command, env=_env()).run(str(plan.work / f"{name}.stdout"))
    if done.returncode != 0:
        err = pathlib.Path(plan.work / f"{name}.stdout.stderr").read_text()[-2000:]
        raise RuntimeError(f"nexmark spark exited {done.returncode}: {err}")
    [summary] = json.loads(done.stdout)
    events = sum(files.read_kind_rows(data, k) for k in local.kinds_read(query))
    from cjob_bench.nexmark.spark import run as spark_run  # noqa: PLC0415 (pyspark)

    got = spark_run.committed_rows(pathlib.Path(summary["output"]))
    kinds = local.kinds_read(query)
    expected = reference.expected(query, {k: files.read_kind(data, k) for k in kinds})
    equal, detail = reference.same(query, got, expected)
    return {
        "wall_seconds": round(done.wall_seconds, 3),
        "cpu_seconds": round(done.cpu_seconds, 3),
        "cpu_seconds_by_kind": {k: round(v, 3) for k, v in done.by_kind.items()},
        "cpu_seconds_per_million_events": round(done.cpu_seconds * 1e6 / events, 3),
        "cpu_seconds_unseen_bound": round(done.unseen_bound_seconds, 3),
        "events_read": events,
        "micro_batches": summary.get("micro_batches"),
        "correct": {"equal": equal, "detail": detail, "rows": len(got)},
    }


def rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The table: per query, each system's sustainable rate and CPU-s per million events,
    the ratio of the rates, and whether both outputs equal the oracle's.

    >>> trial = {"highest_sustained_rate": 9000, "resolved": True}
    >>> doc = {"sustain": {"q1": {"ours": trial, "spark": {**trial, "highest_sustained_rate": 3000}}},
    ...        "cpu": {"q1": {s: {"cpu_seconds_per_million_events": 4.0, "correct": {"equal": True}}
    ...                       for s in SYSTEMS}}}
    >>> rows(doc)[0]["ratio"], rows(doc)[0]["equal"]
    (3.0, True)
    """
    out = []
    for query, found in doc["sustain"].items():
        cost = doc["cpu"].get(query, {})
        row: dict[str, Any] = {"query": query}
        for system in SYSTEMS:
            search = found.get(system, {})
            run = cost.get(system, {})
            row[f"{system}_rate"] = search.get("highest_sustained_rate")
            row[f"{system}_resolved"] = search.get("resolved")
            row[f"{system}_feed_limited"] = search.get("limited_by_feed", False)
            row[f"{system}_crashed_at"] = (search.get("crashed") or {}).get("rate")
            row[f"{system}_cpu_s_per_m"] = run.get("cpu_seconds_per_million_events")
            row[f"{system}_equal"] = run.get("correct", {}).get("equal")
        ours, spark = row["ours_rate"], row["spark_rate"]
        row["ratio"] = round(ours / spark, 2) if ours and spark else None
        row["equal"] = row["ours_equal"] is True and row["spark_equal"] is True
        out.append(row)
    return out


def markdown(table: list[dict[str, Any]]) -> str:
    """The rows as the README's Markdown table (a rate not resolved to the search's
    tolerance is marked ``≥``, one whose next rate the feed could not keep up with ``≥ … (feed)``, one whose search
    ended in a crash ``≥ … (crashed at R)``; one that failed, ``—``).

    >>> print(markdown([{"query": "q1", "ours_rate": 30000, "spark_rate": 10000, "ratio": 3.0,
    ...     "ours_resolved": True, "spark_resolved": False, "ours_cpu_s_per_m": 4.81,
    ...     "spark_cpu_s_per_m": 20.5, "equal": True}]))
    | query | ours, events/s | Spark SS, events/s | ratio | ours, CPU-s per M events | Spark SS, CPU-s per M events | equal |
    |---|---|---|---|---|---|---|
    | q1 | 30,000 | ≥ 10,000 | 3.00x | 4.81 | 20.5 | yes |
    """
    head = (
        "| query | ours, events/s | Spark SS, events/s | ratio | ours, CPU-s per M events "
        "| Spark SS, CPU-s per M events | equal |"
    )
    lines = [head, "|---|---|---|---|---|---|---|"]
    for r in table:
        cells = [
            r["query"],
            *(_cell(r, system) for system in SYSTEMS),
            "—" if r["ratio"] is None else f"{r['ratio']:.2f}x",
            _number(r["ours_cpu_s_per_m"]),
            _number(r["spark_cpu_s_per_m"]),
            "yes" if r["equal"] else "NO",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(row: dict[str, Any], system: str) -> str:
    rate = _rate(
        row[f"{system}_rate"], row[f"{system}_resolved"], row.get(f"{system}_feed_limited", False)
    )
    crashed = row.get(f"{system}_crashed_at")
    if crashed is None:
        return rate
    prefix = "" if rate.startswith("≥") or rate == "—" else "≥ "
    return f"{prefix}{rate} (crashed at {crashed:,})"


def _rate(rate: int | None, resolved: bool | None, feed_limited: bool) -> str:
    if rate is None:
        return "—"
    if feed_limited:
        return f"≥ {rate:,} (feed)"
    return f"{rate:,}" if resolved else f"≥ {rate:,}"


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"
