"""Running a Nexmark query on Spark Structured Streaming: file sink, checkpoints, 1 s micro-batches, timed.

:func:`run` reads the kinds the query needs from the Parquet files of
:mod:`cjob_bench.nexmark.files` (:func:`.sources.read_files`, with the
end-of-input markers), writes the result with Spark's Parquet file sink in
``append`` mode (each micro-batch's files committed to the sink's
``_spark_metadata`` log; a ``checkpointLocation`` beside it) at the
``micro-batch`` trigger (``processingTime = 1 second``) of
:mod:`cjob_bench.peers.spark`, and stops the query once it has read every
event and, for a query whose results the watermark releases, run a micro-batch at the markers' watermark
(the one that emits every window still open). The committed rows are read
back with Spark's batch reader, which reads only what the metadata log
lists. ``availableNow`` is not used: the correctness of windowed queries
needs the no-data micro-batch after the markers, which a trigger that ends
when its input is read does not promise.

The time runs from ``start()`` on the warm SparkSession to the stop; the
events read are the rows of the files the query reads (Spark's
``numInputRows`` counts what is left after filters pushed into the Parquet
reader: q3's).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import pathlib
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from cjob_bench.nexmark import files, reference
from cjob_bench.nexmark.queries import UnknownQueryError
from cjob_bench.nexmark.spark import queries, sources
from cjob_bench.peers import spark as runner

Row = dict[str, Any]
END = datetime.datetime.fromtimestamp(sources.END_MS / 1000, tz=datetime.UTC)


@dataclasses.dataclass(frozen=True, slots=True)
class SparkRun:
    """One run of one query on Spark: its committed rows and figures."""

    query: str
    rows: list[Row]
    seconds: float
    events_read: int
    micro_batches: int
    trigger_seconds: float
    output: pathlib.Path | None = None
    """Where the committed rows are (:func:`committed_rows`)."""

    def summary(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "system": "spark_ss",
            "seconds": round(self.seconds, 3),
            "events_read": self.events_read,
            "events_per_second": round(self.events_read / self.seconds) if self.seconds else None,
            "rows": len(self.rows),
            "micro_batches": self.micro_batches,
            "trigger_seconds": round(self.trigger_seconds, 3),
            "output": None if self.output is None else str(self.output),
        }


def inputs(
    spark: Any, data: pathlib.Path, query: str, markers: pathlib.Path | None
) -> dict[str, Any]:
    """The streaming DataFrames ``query`` reads, from the files under ``data``."""
    bound = sources.bound_ms(data)
    return {
        kind: sources.read_files(spark, data, kind, bound_ms=bound, markers=markers)
        for kind in queries.kinds_read(query)
    }


def run(
    spark: Any,
    query: str,
    data: pathlib.Path,
    work: pathlib.Path,
    *,
    timeout: float = 600.0,
    read_back: bool = True,
) -> SparkRun:
    """Run ``query`` over the events under ``data``; its sink and checkpoint go under ``work``.
    Without ``read_back`` the committed rows stay in ``work`` (``SparkRun.output``:
    :func:`committed_rows` reads them without Spark) and ``rows`` is empty."""
    if query not in queries.QUERIES:
        known = ", ".join(queries.QUERIES)
        raise UnknownQueryError(f"no Nexmark query {query!r} on Spark; choose one of {known}")
    markers = sources.write_end_markers(work)
    out = work / f"{query}-{time.monotonic_ns()}"
    kinds = queries.kinds_read(query)
    expected_rows = sum(files.read_kind_rows(data, kind) for kind in kinds)
    result = queries.QUERIES[query](inputs(spark, data, query, markers))
    writer = (
        result.writeStream.format("parquet")
        .outputMode("append")
        .option("path", str(out / "output"))
        .option("checkpointLocation", str(out / "checkpoint"))
    )
    started = time.perf_counter()
    with _settings(spark, queries.CONF.get(query, {})):
        handle = runner.trigger(writer, "micro-batch").queryName(f"nexmark_{query}").start()
    deadline = started + timeout
    end = END - datetime.timedelta(milliseconds=sources.bound_ms(data))
    try:
        runner.wait_until(handle, lambda: _finished(handle, end, deadline, query))
    finally:
        handle.stop()
    seconds = time.perf_counter() - started
    runner.unload_state_stores(spark)
    batches = runner.with_input(runner.progress(handle))
    rows = spark.read.parquet(str(out / "output")).toArrow().to_pylist() if read_back else []
    trigger = runner.trigger_seconds(runner.progress(handle))
    return SparkRun(query, rows, seconds, expected_rows, len(batches), trigger, out / "output")


def committed_rows(output: pathlib.Path) -> list[Row]:
    """The rows of the files Spark's file sink committed under ``output`` (those its
    ``_spark_metadata`` log adds and does not delete, compacted entries included), read
    with pyarrow: what Spark's batch reader reads, without a SparkSession."""
    added: set[str] = set()
    deleted: set[str] = set()
    for entry in sorted((output / "_spark_metadata").iterdir()):
        if entry.name.startswith("."):
            continue
        for line in entry.read_text().splitlines()[1:]:  # the first line is the version
            item = json.loads(line)
            path = urllib.parse.urlparse(item["path"]).path
            (added if item.get("action", "add") == "add" else deleted).add(path)
    tables = [pq.read_table(path) for path in sorted(added - deleted)]
    return pa.concat_tables(tables).to_pylist() if tables else []


@contextlib.contextmanager
def _settings(spark: Any, conf: dict[str, str]) -> Iterator[None]:
    """The session's ``conf`` set for the block, then the previous values back."""
    saved = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


class SparkRunTimeoutError(TimeoutError):
    """A Spark query did not read all its input and close its windows in time."""


def _finished(handle: Any, end: datetime.datetime, deadline: float, query: str) -> bool:
    """Whether a micro-batch ran and no source has data left (the files are all there
    before the start) and, if the watermark emits its results, a batch ran at
    the final watermark (the stateless queries and q3's join emit as they read)."""
    if time.perf_counter() > deadline:
        raise SparkRunTimeoutError(f"Spark's {query} did not finish before its timeout")
    reports = runner.progress(handle)
    if not reports or handle.status.get("isDataAvailable", True):
        return False
    if query not in queries.CLOSED_BY_WATERMARK:
        return True
    return any(_watermark(p) >= end for p in reports)


def _watermark(report: dict[str, Any]) -> datetime.datetime:
    text = report.get("eventTime", {}).get("watermark", "1970-01-01T00:00:00.000Z")
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def check(run_: SparkRun, data: pathlib.Path) -> tuple[bool, str]:
    """Whether the run's committed rows equal the oracle's over the same events."""
    events = {kind: files.read_kind(data, kind) for kind in queries.kinds_read(run_.query)}
    rows = run_.rows
    if not rows and run_.output is not None:  # not read back (``read_back=False``)
        rows = committed_rows(run_.output)
    return reference.same(run_.query, rows, reference.expected(run_.query, events))
