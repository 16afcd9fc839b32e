"""Word count with exactly-once output: JSON-lines text files in, running counts out.

Input: files of ``{"line": "..."}`` records under ``CJOB_INPUT`` (a directory,
``file://`` or ``s3://bucket/prefix?endpoint=…`` URL). Output: one record
``{"word", "count"}`` per occurrence, with the word's running count, published
transactionally under ``CJOB_OUTPUT``.

    CJOB_INPUT=/data/in CJOB_OUTPUT=/data/out  # then run the flow
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from barrier_runtime.api import Dataflow, Record
from barrier_runtime.connectors.file_source import FileSource
from barrier_runtime.connectors.files import FileSink

WORD = re.compile(r"[a-z0-9']+")


def words(record: Record) -> Iterable[Record]:
    return ({"word": w} for w in WORD.findall(str(record.get("line", "")).lower()))


def count(state: int | None, record: Record) -> tuple[int, Iterable[Record]]:
    n = (state or 0) + 1
    return n, ({"word": record["word"], "count": n},)


def build_flow(input_url: str | None = None, output_url: str | None = None) -> Dataflow:
    source_url = input_url or os.environ["CJOB_INPUT"]
    sink_url = output_url or os.environ["CJOB_OUTPUT"]
    flow = Dataflow("wordcount")
    (
        flow.source("lines", FileSource(source_url, format="jsonl"))
        .flat_map("words", words)
        .key_by("by-word", "word")
        .stateful_map("count", count)
        .sink("counts", FileSink(sink_url))
    )
    return flow
