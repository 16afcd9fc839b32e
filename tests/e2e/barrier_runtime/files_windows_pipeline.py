"""Windows over Parquet files that each span the whole time range (issue 27).

``build_flow(["--in", DIR, "--out", DIR])``: every file of ``--in`` holds events
of every key over the same event-time range, so a file that waits for a slot
(``max_open_files``) while another of its subtask's files is read has its records
late. With ``max_open_files=2`` and two files per subtask no file of a worker waits:
on Spark and in-process alike, nothing is late and every window is exact.
Results (count and sum per key and window) and late records go to two file sinks.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from barrier_runtime.api import Dataflow
from barrier_runtime.api.watermarks import BoundedOutOfOrderness
from barrier_runtime.api.windows import Tumbling
from barrier_runtime.connectors.file_source import FileSource
from barrier_runtime.connectors.files import FileSink

WINDOW_MS = 1_000
MAX_OPEN_FILES = 2


def build_flow(args: Sequence[str]) -> Dataflow:
    parser = argparse.ArgumentParser()
    parser.add_argument("--in", dest="inputs", required=True)
    parser.add_argument("--out", required=True)
    parsed = parser.parse_args(list(args))
    flow = Dataflow("files-windows")
    events = flow.source(
        "files",
        FileSource(parsed.inputs, batch_size=200, max_open_files=MAX_OPEN_FILES),
        timestamps="ts",
        watermarks=BoundedOutOfOrderness(0),
    )
    windows = events.key_by("by-key", "k").window_agg(
        "counts", Tumbling(WINDOW_MS), timestamps="ts", how="count", output="n"
    )
    windows.sink("out", FileSink(f"{parsed.out}/windows"))
    windows.late("late").sink("late-out", FileSink(f"{parsed.out}/late"))
    return flow
