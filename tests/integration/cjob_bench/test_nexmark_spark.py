"""Every Nexmark query on Spark Structured Streaming commits the oracle's rows.

The events: 4 000 from two generators at 100 events/s (40 s of event time:
twenty 2 s hops, four 10 s windows, sessions), written as Parquet files. One
SparkSession (``local[2]``) for the module runs each query with Spark's
Parquet file sink, a checkpoint location and 1 s micro-batches
(:mod:`cjob_bench.nexmark.spark.run`); the rows the sink committed must equal
the oracle's, compared as the in-process runs are (a multiset; q4 by each
category's final average).
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
from cjob_bench.nexmark import files, queries
from cjob_bench.nexmark.config import NexmarkConfig
from cjob_bench.nexmark.spark import run, session

pytest.importorskip("pyspark")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("nexmark") / "events"
    files.write(NexmarkConfig(events=4_000, generators=2, first_event_rate=100), out, chunk=1_000)
    return out


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    built = session(2)
    yield built
    built.stop()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("query", queries.QUERIES)
def test_the_spark_query_commits_the_oracles_rows(
    query: str, spark: Any, data: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    done = run.run(spark, query, data, tmp_path, timeout=240)
    equal, why = run.check(done, data)
    assert equal, why
    assert done.rows, "the data set is too small to give this query results"
    assert list((tmp_path).glob(f"{query}-*/checkpoint/commits/*")), "no micro-batch committed"
