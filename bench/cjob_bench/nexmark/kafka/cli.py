"""``python -m cjob_bench nexmark kafka-sustain`` and ``kafka-latency``: Nexmark on a real Kafka.

``kafka-sustain --query q1`` searches the highest rate our job sustains (from
``--start-rate``, :func:`.method.search`; or exactly the ``--rates`` given), each trial a live run of
``--seconds`` (:mod:`.method` says when a rate is sustained); ``kafka-latency --query q1
--rate R`` runs once at R (use half the sustained rate) and reports the latency to visible
output and to the sink before commit. Both start their own Kafka broker (Apache Kafka,
KRaft, loopback; or use ``--bootstrap``), a warm SparkSession ``local[P]`` and the embedded
S3 server for the checkpoints, and print one JSON document (``--out`` also writes it).
``--system spark`` runs Spark Structured Streaming instead (:mod:`.spark_system`: its Kafka
source and sink, ``--spark-trigger`` micro-batches checkpointed to a local directory) on a
SparkSession ``local[P]`` with the Kafka connector's jars, without the S3 server.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import pathlib
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from cjob_bench.harness import runs as harness
from cjob_bench.nexmark import queries
from cjob_bench.nexmark.config import BASE_TIME_MS
from cjob_bench.nexmark.kafka import cpu_timeline, method, profile, run, spark_system, warm
from cjob_bench.peers import ours as peer
from cjob_bench.workloads.w4_kafka import facts
from cjob_bench.workloads.w4_kafka.main import kafka_broker

log = harness.logger("nexmark-kafka")


def add_parsers(sub: Any) -> None:
    """Add ``kafka-sustain`` and ``kafka-latency`` to the ``nexmark`` subcommands."""
    sustain = sub.add_parser("kafka-sustain", help="highest rate sustained on Kafka")
    _common(sustain)
    sustain.add_argument("--rates", default=None, help="these rates only (comma-separated)")
    sustain.add_argument("--start-rate", type=int, default=5_000)
    sustain.add_argument("--ceiling", type=int, default=400_000)
    sustain.add_argument("--tolerance", type=float, default=0.1)
    sustain.add_argument("--max-trials", type=int, default=8)
    sustain.add_argument(
        "--warm-trial",
        type=float,
        default=method.WARM_TRIAL_SECONDS,
        metavar="SECONDS",
        help="before the search, run the query this long at the start rate and do not count "
        "it (search revision 3; 0: none) (default %(default)g)",
    )
    sustain.add_argument(
        "--give-up-lag",
        type=float,
        default=method.LAG_BOUND_SECONDS,
        help="a trial whose lag after the warm-up passes this many seconds of input stops "
        "there (its verdict is decided); the method's bound, or below 0 (tests): at the "
        "warm-up's end whatever the lag",
    )
    lat = sub.add_parser("kafka-latency", help="latency to visible output on Kafka")
    _common(lat)
    lat.add_argument("--rate", type=int, required=True, help="half the sustained rate")
    lat.add_argument(
        "--warmup",
        type=float,
        default=None,
        help="input seconds not measured (default: 10, at most a third of --seconds)",
    )
    lat.add_argument(
        "--profile", action="store_true", help="ours: where the latency goes (.profile)"
    )
    lat.add_argument(
        "--cpu-timeline",
        action="store_true",
        help="each process kind's CPU per 10 s of feed (broker, workers, feed, ...)",
    )
    lat.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run this many times on the same broker and SparkSession, one after another "
        "(the first is ``run``, the others ``repeats``: warm components apart from a cold start)",
    )


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--query", required=True, choices=queries.QUERIES)
    p.add_argument("--system", choices=("ours", "spark"), default="ours", help="under test")
    p.add_argument(
        "--spark-trigger",
        default=spark_system.DEFAULT_TRIGGER,
        help="Spark's processing-time trigger ('1 second', '100 milliseconds'; '0 seconds': "
        "back to back)",
    )
    p.add_argument("--seconds", type=float, default=60.0, help="input length of a run")
    p.add_argument("--partitions", type=int, default=2, help="P: partitions and parallelism")
    p.add_argument("--interval", type=float, default=1.0, help="checkpoint interval (s)")
    p.add_argument("--drain", type=float, default=60.0, help="s to wait for the lag to clear")
    p.add_argument("--bootstrap", default=None, help="use this Kafka broker")
    p.add_argument("--broker-version", default=None, help="with --bootstrap")
    p.add_argument(
        "--warm-broker",
        type=float,
        default=0.0,
        help="first drive the broker for this many s (transactions, a consumer group): "
        "its own warm-up apart from the job's (:mod:`.warm`)",
    )
    p.add_argument("--keep-rows", action="store_true", help="keep committed rows (rows_file)")
    p.add_argument("--work", type=pathlib.Path, default=None, help="run files (default: temp)")
    p.add_argument("--out", type=pathlib.Path, default=None, help="also write the JSON here")


@contextlib.contextmanager
def setup(ns: argparse.Namespace) -> Iterator[tuple[Any, run.System, run.Settings]]:
    """A broker, the system under test on a warm SparkSession (ours: with the embedded S3
    server) and the run settings; all stopped after."""
    work = ns.work or pathlib.Path(tempfile.mkdtemp(prefix="nexmark-kafka-"))
    settings = run.Settings(
        seconds=ns.seconds,
        work=work,
        partitions=ns.partitions,
        interval=ns.interval,
        drain=ns.drain,
        keep_rows=ns.keep_rows,
        give_up_after=None if ns.command == "kafka-latency" else method.warm_up(ns.seconds),
        give_up_lag=getattr(ns, "give_up_lag", method.LAG_BOUND_SECONDS),
        cpu_timeline=getattr(ns, "cpu_timeline", False),
    )
    if ns.system == "spark" and getattr(ns, "profile", False):
        raise SystemExit("--profile is for --system ours (Spark's batches report their phases)")
    try:
        if ns.system == "spark":
            with kafka_broker(ns) as broker:
                spark = spark_system.session(ns.partitions)
                try:
                    system = spark_system.SparkSystem(
                        spark, work / "spark-checkpoints", trigger=ns.spark_trigger
                    )
                    yield broker, system, settings
                finally:
                    try:
                        spark.stop()
                    except Exception as exc:  # a JVM that died cannot be stopped
                        log(f"stopping Spark failed: {type(exc).__name__}: {exc}")
            return
        with (
            kafka_broker(ns) as broker,
            harness.spark_and_s3(
                f"local[{ns.partitions}]",
                app_name="nexmark-kafka",
                parallelism=ns.partitions,
                bucket=peer.BUCKET,
            ) as (spark, s3),
        ):
            runner = run.Runner(
                spark,
                s3,
                parallelism=ns.partitions,
                interval=ns.interval,
                profile=getattr(ns, "profile", False),
            )
            yield broker, runner, settings
    finally:
        if ns.work is None and not ns.keep_rows:
            shutil.rmtree(work, ignore_errors=True)


class _SearchEnded(Exception):
    """A trial crashed: the search stops, its document says so (``crashed``)."""


def trial(
    query: str,
    rate: int,
    s: run.Settings,
    broker: Any,
    runner: run.System,
    warmup: float | None = None,
) -> dict[str, Any]:
    """One run, its verdict, its latency figures, and its raw series (no arrays)."""
    log(f"{query} at {rate}/s for {s.seconds:g}s ...")
    raw = run.run(query, rate, s, broker, runner)
    out = {k: v for k, v in raw.items() if k not in ("arrays", "clock")}
    out["verdict"] = method.verdict(raw)
    warmup = min(10.0, s.seconds / 3) if warmup is None else warmup
    out["latency"] = method.latency(raw, BASE_TIME_MS, warmup=warmup)
    cut = profile.breakdown(raw, BASE_TIME_MS, warmup)
    if cut is not None:
        out["profile"] = cut
        log(f"{query} at {rate}/s: where the latency goes: {cut['parts']}")
    windows = profile.by_window(raw)
    if windows is not None:
        out["timeline_by_window"] = windows
    if raw.get("cpu_timeline"):
        first = raw["feed"]["first_wall"]
        out["cpu_by_window"] = cpu_timeline.by_window(raw["cpu_timeline"], first)
    v = out["verdict"]
    log(
        f"{query} at {rate}/s: sustained {v['sustained']} (lag after warm-up at most "
        f"{v['max_lag_after_warm']}, bound {v['lag_bound']:g}; {v['checks']}); visible p50/p99 "
        f"{out['latency']['visible_ms']['p50']}/{out['latency']['visible_ms']['p99']} ms"
    )
    return out


def main(ns: argparse.Namespace) -> dict[str, Any]:
    started = time.time()
    machine = facts.machine()
    with setup(ns) as (broker, runner, settings):
        warmed = None
        if ns.warm_broker > 0:
            log(f"warming the broker for {ns.warm_broker:g}s ...")
            warmed = warm.warm_broker(broker.bootstrap_servers, ns.warm_broker)
            log(f"broker warmed: {warmed}")
        if ns.command == "kafka-latency":
            runs = [
                trial(ns.query, ns.rate, settings, broker, runner, ns.warmup)
                for _ in range(max(1, ns.repeat))
            ]
            doc: dict[str, Any] = {"run": runs[0], "repeats": runs[1:]}
        else:
            trials: list[dict[str, Any]] = []
            crashed: dict[str, Any] | None = None

            def one(rate: int) -> tuple[bool, float | None]:
                nonlocal crashed
                try:
                    trials.append(trial(ns.query, rate, settings, broker, runner))
                except Exception as exc:  # the system (or its JVM) died: the search ends here
                    crashed = {"rate": rate, "error": f"{type(exc).__name__}: {exc}"}
                    log(f"{ns.query} at {rate}/s: the run crashed ({crashed['error']})")
                    raise _SearchEnded from exc
                verdict = trials[-1]["verdict"]
                return bool(verdict["sustained"]), verdict["achieved_rate"]

            warm_trial: dict[str, Any] | None = None
            with contextlib.suppress(_SearchEnded):
                if not ns.rates and ns.warm_trial > 0:
                    log(f"{ns.query}: warm-up trial (not counted) ...")
                    brief = dataclasses.replace(settings, seconds=ns.warm_trial)
                    try:
                        warm_trial = trial(ns.query, ns.start_rate, brief, broker, runner)
                    except Exception as exc:  # as a crashed trial: no search on a dead system
                        crashed = {"rate": ns.start_rate, "error": f"{type(exc).__name__}: {exc}"}
                        log(f"{ns.query}: the warm-up trial crashed ({crashed['error']})")
                        raise _SearchEnded from exc
                if ns.rates:
                    for rate in [int(r) for r in ns.rates.split(",") if r]:
                        one(rate)
                else:
                    method.search(
                        one,
                        ns.start_rate,
                        ceiling=ns.ceiling,
                        tolerance=ns.tolerance,
                        max_trials=ns.max_trials,
                    )
            doc = method.searched(trials, ns.tolerance) | {
                "crashed": crashed,
                "warm_trial": warm_trial,
            }
        version = getattr(broker, "version", None)
    doc = {
        "command": ns.command,
        "query": ns.query,
        "system": ns.system,
        "method": method.__doc__,
        "setup": {k: str(v) if isinstance(v, pathlib.Path) else v for k, v in vars(ns).items()},
        "kafka_broker": version,
        "broker_warmed": warmed,
        "machine": {"before": machine, "after": facts.machine()},
        "wall_seconds": round(time.time() - started, 1),
        **doc,
    }
    text = json.dumps(doc, indent=1, default=str)
    if ns.out is not None:
        ns.out.write_text(text + "\n")
    print(text)
    sys.stdout.flush()
    return doc
