"""Nexmark's inputs as Spark streaming DataFrames: event time, watermark, end of input.

A query of :mod:`.queries` takes its inputs as streaming DataFrames, one per
kind (``persons``, ``auctions``, ``bids``), whatever they are read from. Each
carries the kind's columns (``dateTime`` int64 ms, as the generator writes
them) plus ``event_time`` (``timestamp_millis(dateTime)``) with a watermark
``bound_ms`` behind the newest event seen, as Flink's nexmark DDL declares it on
the source. :func:`read_files` reads the Parquet files of
:mod:`cjob_bench.nexmark.files`; a Kafka reader only has to give the same
columns and call :func:`event_time`.

End of input. A Spark stream never ends, so windows the final watermark does
not pass are never emitted (Flink closes them with a final ``MAX_WATERMARK``
when a bounded source ends). To give the same results as a finished stream,
:func:`write_end_markers` writes one marker event per kind (``dateTime`` in
2100) in a directory of its own, and :func:`read_files` unions it with the
data: the marker moves the watermark past every window, and is dropped right
after the watermark (``event_time < END``, which Spark's optimizer does not
push below the watermark because it reads the event-time column), so no query
sees it. Every window then closes in the next micro-batch, as at the end of a
bounded stream.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from cjob_bench.nexmark import files, generator

END_MS = 4_102_444_800_000
"""2100-01-01T00:00:00Z: the end-of-input marker's event time, past every generated event."""
MARKER_DIR = "end-of-input"


def ddl(kind: str) -> str:
    """The Spark DDL schema of ``kind``'s Parquet files."""
    names = {pa.int64(): "BIGINT", pa.string(): "STRING"}
    return ", ".join(f"`{f.name}` {names[f.type]}" for f in generator.SCHEMAS[kind])


def event_time(frame: Any, bound_ms: int) -> Any:
    """``frame`` with ``event_time`` from ``dateTime`` and its watermark ``bound_ms`` behind."""
    from pyspark.sql import functions as sf  # noqa: PLC0415 (only where Spark runs)

    return frame.withColumn("event_time", sf.timestamp_millis("dateTime")).withWatermark(
        "event_time", f"{bound_ms} milliseconds"
    )


def write_end_markers(work: pathlib.Path) -> pathlib.Path:
    """One end-of-input event per kind under ``work`` (see the module docstring); the directory."""
    out = work / MARKER_DIR
    for kind, schema in generator.SCHEMAS.items():
        (out / kind).mkdir(parents=True, exist_ok=True)
        row = {f.name: (END_MS if f.name == "dateTime" else _zero(f.type)) for f in schema}
        pq.write_table(pa.Table.from_pylist([row], schema=schema), out / kind / "end.parquet")
    return out


def _zero(kind: pa.DataType) -> Any:
    return 0 if pa.types.is_integer(kind) else ""


def read_files(
    spark: Any,
    data: pathlib.Path,
    kind: str,
    *,
    bound_ms: int = 0,
    markers: pathlib.Path | None = None,
) -> Any:
    """``kind``'s events under ``data`` as a streaming DataFrame with event time and watermark.

    Every generator's file is read in the same micro-batch (each spans the
    whole run in event time, so reading them one after another would make all
    but the first late). With ``markers`` (from :func:`write_end_markers`) the
    stream ends as a bounded one does.
    """
    from pyspark.sql import functions as sf  # noqa: PLC0415 (only where Spark runs)

    frame = spark.readStream.schema(ddl(kind)).parquet(str(data / kind))
    if markers is None:
        return event_time(frame, bound_ms)
    end = spark.readStream.schema(ddl(kind)).parquet(str(markers / kind))
    watermarked = event_time(frame.unionByName(end), bound_ms)
    return watermarked.filter(sf.col("event_time") < sf.timestamp_millis(sf.lit(END_MS)))


def bound_ms(data: pathlib.Path) -> int:
    """The watermark bound of the events under ``data`` (their out-of-order groups), in ms."""
    cfg = files.read_config(data)
    group = cfg.out_of_order_group_size
    return 0 if group == 1 else -(-group * cfg.inter_event_delay_us // 1000)
