"""A keyed running count over JSON-lines files with 1 % bad records, all dead-lettered.

``build_flow(["--input", DIR, "--out", URL, "--dead-letters", URL, "--pace", S])``:
the files under ``--input`` are read with ``on_error="dead-letter"`` (a malformed
line goes to dead letters with its file and line), a ``parse-amount`` step turns
the ``amount`` text into an int with ``on_error="dead-letter"`` (a non-number
goes to dead letters with the record), and the running count per key is
published exactly once. :func:`write_input` makes the files and returns the
output and dead letters a correct run must publish, each exactly once.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time
from collections.abc import Iterable, Sequence
from typing import Any

from barrier_runtime.api import Dataflow, Record
from barrier_runtime.connectors.file_source import FileSource
from barrier_runtime.connectors.files import FileSink
from barrier_runtime.demo import count_event

FILES, LINES_PER_FILE, KEYS_PER_FILE = 4, 2500, 25


def parse_amount(record: Record) -> Record:
    return {**record, "amount": int(record["amount"])}


def build_flow(args: Sequence[str] = ()) -> Dataflow:
    parser = argparse.ArgumentParser(prog="dead_letter_pipeline")
    parser.add_argument("--input", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--dead-letters", required=True)
    parser.add_argument("--pace", type=float, default=0.0, help="seconds of sleep per 100 rows")
    opts = parser.parse_args(list(args))
    flow = Dataflow("dead-letters", dead_letters=FileSink(opts.dead_letters))
    lines = flow.source("lines", FileSource(opts.input, batch_size=50, on_error="dead-letter"))
    if opts.pace:
        lines = lines.map_batches("pace", _pace(opts.pace))
    lines.map("parse-amount", parse_amount, on_error="dead-letter").key_by(
        "by-key", "key"
    ).stateful_map("count", count_event).sink("out", FileSink(opts.out))
    return flow


def _pace(seconds_per_100: float) -> Any:
    def pace(batch: Any) -> Any:
        time.sleep(seconds_per_100 * batch.num_rows / 100)
        return batch

    return pace


def write_input(directory: pathlib.Path) -> tuple[list[Record], list[tuple[str, str, str]]]:
    """The input files; the good output and the dead letters ``(step, where, record)``.

    Keys belong to one file each, so every key's records keep their order.
    Every 200th line from line 50 on is malformed JSON; every 200th from line 150 on
    has an amount that is not a number: 1 % of the records in all.
    """
    directory.mkdir(parents=True, exist_ok=True)
    good: list[Record] = []
    bad: list[tuple[str, str, str]] = []
    for f in range(FILES):
        name = f"events-{f}.jsonl"
        lines: list[str] = []
        seqs: dict[str, int] = {}
        for i in range(LINES_PER_FILE):
            key = f"f{f}-k{i % KEYS_PER_FILE}"
            seq = seqs.get(key, 0)
            if i % 200 == 50:
                lines.append(f'{{"key": "{key}", "seq": {seq}, "amount": "1"')
                bad.append(("lines", f"{name} line {i + 1}", lines[-1]))
                continue
            record = {"key": key, "seq": seq, "amount": "x" if i % 200 == 150 else str(i)}
            lines.append(json.dumps(record))
            seqs[key] = seq + 1
            if i % 200 == 150:
                bad.append(("parse-amount", "", json.dumps(record)))
            else:
                good.append(record)
        (directory / name).write_text("\n".join(lines) + "\n")
    counts: dict[str, int] = {}
    expected = []
    for record in good:
        counts[record["key"]] = counts.get(record["key"], 0) + 1
        expected.append(
            {"key": record["key"], "seq": record["seq"], "count": counts[record["key"]]}
        )
    return expected, bad


def dead_letter_identities(rows: Iterable[Record]) -> list[tuple[str, str, str]]:
    """``(step, where, record)`` of published dead letters (``where``: the file and line)."""
    return [
        (row["step"], (row["position"] or "").rsplit("/", 1)[-1], row["record"]) for row in rows
    ]
