"""Spark Structured Streaming on the suite's files (W1-W3), through the runner of :mod:`cjob_bench.peers.spark`.

Queries (``spark.sql.shuffle.partitions`` = P, state store and
``checkpointLocation`` on local disk, a fresh one per run):

* W1 ``readStream.parquet`` → ``groupBy("key").agg(sum("value"))``;
* W2 ``readStream.parquet`` → ``groupBy("key").count()``: Spark has no
  per-record Python state on this path; the closest equivalent of a
  per-key running count, and as cheap as W1 for Spark;
* W3 ``readStream.json`` (schema given) → ``filter(kind = "buy")`` →
  ``groupBy("key").count()``.

Output mode ``update``; the sink is ``foreachBatch`` writing each
micro-batch's updated rows as Parquet (W1, W2) or JSON (W3) files (Spark's
own file sink takes only ``append``, which an aggregation without a
watermark cannot use). Modes:

* ``stream``: the ``micro-batch`` mode (``trigger(processingTime="1 second")``) with
  ``maxFilesPerTrigger=1`` (one micro-batch per file; the query is stopped
  once as many micro-batches with input as files have run, seen in its
  progress reports);
* ``available_now``: the ``available-now`` mode (``trigger(availableNow=True)``),
  one micro-batch: the best case;
* ``cold``: ``stream`` in a new Python process with a new SparkSession,
  timed from process launch to exit (``python -m cjob_bench.peers.spark.files``).

After each query its state stores are unloaded (:func:`~cjob_bench.peers.spark.unload_state_stores`):
the suite's later runs, ours included, share the driver JVM's heap.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time
from typing import Any

from cjob_bench.harness import answers, machine, runs
from cjob_bench.peers import spark as runner
from cjob_bench.workloads import FILE_WORKLOADS, data


def run(
    spark: Any, workload: str, dataset: data.DataSet, mode: str, work: pathlib.Path
) -> dict[str, Any]:
    if mode == "cold":
        return run_cold(workload, dataset, work)
    out = work / f"spark-{workload}-{mode}-{time.monotonic_ns()}"
    load_before = machine.loadavg()
    started = time.time()
    figures = query(spark, workload, dataset, mode, out)
    wall = time.time() - started
    return _finish(workload, dataset, mode, out, wall, figures, load_before)


def _finish(
    workload: str,
    dataset: data.DataSet,
    mode: str,
    out: pathlib.Path,
    wall: float,
    figures: dict[str, Any],
    load_before: list[float],
) -> dict[str, Any]:
    spec = FILE_WORKLOADS[workload]
    # the JSON reader counts the rows left after the pushed-down filter (W3)
    rows = {dataset.events, int(dataset.buy_counts.sum())} if spec.json_lines else {dataset.events}
    if figures["input_rows"] not in rows:
        raise RuntimeError(f"Spark SS read {figures['input_rows']} rows, expected {sorted(rows)}")
    read = answers.from_jsonl_files if spec.json_lines else answers.from_parquet_files
    got = read(out / "output", dataset.keys, value=spec.value)
    return {
        "system": "spark_ss",
        "variant": mode,
        "wall_seconds": round(wall, 3),
        "events_per_second": round(dataset.events / wall),
        **figures,
        "loadavg_before": load_before,
        "loadavg_after": machine.loadavg(),
        "correct": answers.check(got, dataset.expected(workload)),
    }


def query(
    spark: Any, workload: str, dataset: data.DataSet, mode: str, out: pathlib.Path
) -> dict[str, Any]:
    from pyspark.sql import functions as sf  # noqa: PLC0415 (only where Spark runs)

    reader = spark.readStream.schema(data.SCHEMA_DDL)
    if mode != "available_now":
        reader = reader.option("maxFilesPerTrigger", 1)
    if workload == "W3":
        events = reader.json(str(dataset.jsonl)).filter(sf.col("kind") == data.FILTER_KIND)
        result = events.groupBy("key").count()
    elif workload == "W2":
        result = reader.parquet(str(dataset.parquet)).groupBy("key").count()
    else:
        result = (
            reader.parquet(str(dataset.parquet)).groupBy("key").agg(sf.sum("value").alias("sum"))
        )
    target = str(out / "output")
    fmt = "json" if FILE_WORKLOADS[workload].json_lines else "parquet"

    def write(batch: Any, batch_id: int) -> None:
        batch.write.mode("overwrite").format(fmt).save(f"{target}/batch-{batch_id:06d}")

    writer = (
        result.writeStream.outputMode("update")
        .foreachBatch(write)
        .option("checkpointLocation", str(out / "checkpoint"))
    )
    if mode == "available_now":
        q = runner.trigger(writer, "available-now").start()
        q.awaitTermination()
    else:
        q = runner.trigger(writer, "micro-batch").start()
        # one file per micro-batch
        runner.wait_until(q, lambda: len(runner.with_input(runner.progress(q))) >= dataset.files)
        q.stop()
    runner.unload_state_stores(spark)
    batches = runner.with_input(runner.progress(q))
    trigger = runner.trigger_seconds(batches)
    return {
        "input_rows": sum(int(p.get("numInputRows", 0)) for p in batches),
        "micro_batches": len(batches),
        "processing_window_seconds": round(trigger, 3),
        "processing_window_definition": "sum of triggerExecution of the micro-batches with input",
    }


def run_cold(workload: str, dataset: data.DataSet, work: pathlib.Path) -> dict[str, Any]:
    out = work / f"spark-{workload}-cold-{time.monotonic_ns()}"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(runs.BENCH), *sys.path]))
    args = [sys.executable, "-m", "cjob_bench.peers.spark.files", "--workload", workload]
    args += ["--parquet", str(dataset.parquet), "--jsonl", str(dataset.jsonl)]
    args += ["--events", str(dataset.events), "--keys", str(dataset.keys), "--output", str(out)]
    args += ["--files", str(dataset.files)]
    load_before = machine.loadavg()
    started = time.time()
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    wall = time.time() - started
    if done.returncode != 0:
        raise RuntimeError(f"cold Spark run failed:\n{done.stderr[-3000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return _finish(workload, dataset, "cold", out, wall, figures, load_before)


def _main() -> None:
    """The cold run: a new SparkSession in this process, the ``stream`` query, figures on stdout."""
    parser = argparse.ArgumentParser()
    for name in ("--workload", "--parquet", "--jsonl", "--output"):
        parser.add_argument(name, required=True)
    parser.add_argument("--events", type=int, required=True)
    parser.add_argument("--files", type=int, required=True)
    parser.add_argument("--keys", type=int, required=True)
    parser.add_argument("--parallelism", type=int, default=2)
    ns = parser.parse_args()
    import numpy as np  # noqa: PLC0415

    from barrier_runtime.spark import session  # noqa: PLC0415

    dataset = data.DataSet(
        pathlib.Path(ns.parquet),
        pathlib.Path(ns.jsonl),
        ns.events,
        ns.keys,
        ns.files,
        1,
        *(np.zeros(0, dtype=np.int64),) * 3,
    )
    started = time.time()
    spark = session.build_session(
        f"local[{ns.parallelism}]", app_name="suite-spark-cold", parallelism=ns.parallelism
    )
    spark.conf.set("spark.sql.shuffle.partitions", str(ns.parallelism))
    session_seconds = time.time() - started
    figures = query(spark, ns.workload, dataset, "stream", pathlib.Path(ns.output))
    spark.stop()
    print(json.dumps({**figures, "session_start_seconds": round(session_seconds, 3)}))


if __name__ == "__main__":
    _main()
