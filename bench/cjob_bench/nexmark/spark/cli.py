"""``python -m cjob_bench nexmark spark``: queries on Spark Structured Streaming, one JSON per query.

One SparkSession (``local[P]``, :func:`cjob_bench.nexmark.spark.session`)
runs each query in turn (:func:`.run.run`) with its sink and checkpoint in a
temporary directory; each query's figures go to stderr as they finish, all of
them are returned (the caller prints them), with ``equal``/``check`` against
the oracle when asked.
"""

from __future__ import annotations

import json
import pathlib
import sys
import tempfile
from typing import Any

from cjob_bench.nexmark import files
from cjob_bench.nexmark.spark import run as spark_run
from cjob_bench.nexmark.spark import session


def run(
    data: pathlib.Path,
    names: str,
    *,
    parallelism: int = 2,
    check: bool = False,
    keep_output: pathlib.Path | None = None,
) -> list[dict[str, Any]]:
    """Run the comma-separated ``names`` over the events under ``data``; their summaries.
    With ``keep_output`` each query's sink and checkpoint stay under it and its rows are
    not read back (``output`` in the summary; :func:`.run.committed_rows`)."""
    files.read_config(data)  # one clear error when data holds no events
    spark = session(parallelism)
    results = []
    try:
        for query in [q.strip() for q in names.split(",") if q.strip()]:
            if keep_output is not None:
                keep_output.mkdir(parents=True, exist_ok=True)
                done = spark_run.run(spark, query, data, keep_output, read_back=False)
            else:
                with tempfile.TemporaryDirectory(prefix=f"nexmark-spark-{query}-") as temp:
                    done = spark_run.run(spark, query, data, pathlib.Path(temp))
            summary = done.summary()
            if check:
                summary["equal"], summary["check"] = spark_run.check(done, data)
            print(json.dumps(summary), file=sys.stderr)
            results.append(summary)
    finally:
        spark.stop()
    return results
