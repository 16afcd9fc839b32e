"""Clicks per user per minute, in event time, exactly once; late clicks kept apart.

Input: JSON-lines files of ``{"user": ..., "ts": <ms since the epoch>}`` under
``CJOB_INPUT`` (a directory, ``file://`` or ``s3://bucket/prefix?endpoint=…``).
Clicks may arrive up to 5 s out of order. Output under ``CJOB_OUTPUT``: one
record per user and minute, ``{"key", "window_start", "window_end", "clicks",
"update"}``, once the watermark passes the minute. Clicks up to 30 s after
their minute closed update it (``update`` 1, 2, …). Later clicks go to
``CJOB_OUTPUT``/late, exactly once. A silent input file stops holding the minutes
back after 10 s.

    cjob run examples/pipelines/clicks_per_minute.py -- --input /data/clicks --output /data/out
"""

from __future__ import annotations

import argparse
import os

from barrier_runtime.api import Dataflow
from barrier_runtime.api.watermarks import BoundedOutOfOrderness
from barrier_runtime.api.windows import Tumbling, count
from barrier_runtime.connectors.file_source import FileSource
from barrier_runtime.connectors.files import FileSink

MINUTE = 60_000


def build_flow(args: list[str] | None = None) -> Dataflow:
    """``cjob run`` passes the arguments after ``--``: ``[--input URL] [--output URL]``
    (default: ``$CJOB_INPUT``, ``$CJOB_OUTPUT``)."""
    parser = argparse.ArgumentParser(prog="clicks_per_minute")
    parser.add_argument("--input", default=os.environ.get("CJOB_INPUT"))
    parser.add_argument("--output", default=os.environ.get("CJOB_OUTPUT"))
    ns = parser.parse_args(args or [])
    if not ns.input or not ns.output:
        parser.error("give --input and --output (or set CJOB_INPUT and CJOB_OUTPUT)")
    source_url, sink_url = ns.input, ns.output.rstrip("/")
    flow = Dataflow("clicks-per-minute")
    clicks = flow.source(
        "clicks",
        FileSource(source_url, format="jsonl"),
        timestamps="ts",
        watermarks=BoundedOutOfOrderness(5_000).with_idleness(10.0),
    )
    per_minute = clicks.key_by("by-user", "user").window(
        "per-minute",
        Tumbling(MINUTE),
        timestamps="ts",
        aggregate=count(),
        output="clicks",
        allowed_lateness_ms=30_000,
    )
    per_minute.sink("counts", FileSink(sink_url + "/counts"))
    per_minute.late("late-clicks").sink("late", FileSink(sink_url + "/late"))
    return flow
