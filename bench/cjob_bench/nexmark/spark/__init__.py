"""Nexmark on Spark Structured Streaming, the peer the field compares with; checked equal to ours.

:mod:`.sources` (inputs as streaming DataFrames with event time, watermark and
an end of input; :func:`~.sources.read_files` for the Parquet files),
:mod:`.queries` and :mod:`.q4` (the queries, functions of their inputs),
:mod:`.run` (a query to Spark's Parquet file sink with checkpoints at 1 s
micro-batches, timed, checked against the oracle). Only this package imports
pyspark (lazily, where Spark runs). :func:`session` builds the SparkSession
the way the project's other Spark peers do
(:func:`barrier_runtime.spark.session.build_session`: Java, local IP, quiet logs).
"""

from __future__ import annotations

import os
import pathlib
from typing import Any

RECENT_PROGRESS = 10_000
"""Progress reports a query keeps: a run sums every micro-batch's input rows."""
DRIVER_MEMORY = "4g"
"""The driver JVM's heap (``spark.driver.memory``), as in the project's other Spark peers.
Spark's default, 1 GiB, runs out on q7: its highest-bid query keeps each window's bids
(``collect_list``) until the window closes, and over the 5 M events' files (one
micro-batch) or a Kafka backlog that is more than a 1 GiB heap holds."""


def session(parallelism: int = 2) -> Any:
    """A local SparkSession with ``parallelism`` task slots and shuffle partitions.

    Spark's Python workers import q4's functions by module, so their
    ``PYTHONPATH`` names the directory ``cjob_bench`` is in.
    """
    from barrier_runtime.spark import session as spark_session  # noqa: PLC0415

    bench = str(pathlib.Path(__file__).resolve().parents[3])
    paths = [bench, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    conf = {
        "spark.executorEnv.PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)),
        "spark.sql.shuffle.partitions": str(parallelism),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.numRecentProgressUpdates": str(RECENT_PROGRESS),
        "spark.driver.memory": DRIVER_MEMORY,
    }
    return spark_session.build_session(
        f"local[{parallelism}]", app_name="nexmark-spark", parallelism=parallelism, conf=conf
    )
