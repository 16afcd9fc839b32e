"""Nexmark events as Parquet files: one directory per kind, one file per generator.

Layout under ``out``::

    nexmark.json                 the NexmarkConfig the files were made with
    persons/gen-0000.parquet     generator 0's people, in event-time order
    auctions/gen-0000.parquet
    bids/gen-0000.parquet
    ...                          gen-0001 ... one per generator

Every generator's file spans the whole run in event time (generators are
parallel timelines), so P readers of ``generators = P`` (or a multiple of P)
files each read a stream in event-time order, as they would from P Kafka
partitions. A ``FileSource`` assigns files to subtasks by sorted name; Spark
reads each kind's directory. Files are written a ``chunk`` of events at a
time (one row group each), so memory stays bounded however many events.

>>> import tempfile
>>> out = pathlib.Path(tempfile.mkdtemp())
>>> written = write(NexmarkConfig(events=500, generators=2), out, chunk=100)
>>> sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet"))[:2]
['auctions/gen-0000.parquet', 'auctions/gen-0001.parquet']
>>> written["bids"], read_config(out).generators
(460, 2)
>>> shutil.rmtree(out)
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import shutil  # noqa: F401 - the example cleans up with it

import pyarrow as pa
import pyarrow.parquet as pq

from cjob_bench.nexmark import generator
from cjob_bench.nexmark.config import NexmarkConfig

KINDS = ("persons", "auctions", "bids")
CONFIG_FILE = "nexmark.json"


def write(cfg: NexmarkConfig, out: pathlib.Path, *, chunk: int = 100_000) -> dict[str, int]:
    """Generate ``cfg``'s events into ``out`` (see the module docstring); rows per kind."""
    out.mkdir(parents=True, exist_ok=True)
    for kind in KINDS:
        (out / kind).mkdir(exist_ok=True)
    rows = dict.fromkeys(KINDS, 0)
    for g in range(cfg.generators):
        first, stop = cfg.generator_range(g)
        writers = {
            kind: pq.ParquetWriter(out / kind / f"gen-{g:04d}.parquet", generator.SCHEMAS[kind])
            for kind in KINDS
        }
        try:
            for start in range(0, stop - first, chunk):
                tables = generator.generate(cfg, g, start, min(start + chunk, stop - first))
                for kind, table in tables.by_kind().items():
                    writers[kind].write_table(table, row_group_size=max(table.num_rows, 1))
                    rows[kind] += table.num_rows
        finally:
            for w in writers.values():
                w.close()
    (out / CONFIG_FILE).write_text(json.dumps(dataclasses.asdict(cfg), indent=1) + "\n")
    return rows


class NotNexmarkDataError(ValueError):
    """A directory holds no Nexmark events (no ``nexmark.json``): generate them first."""


def read_config(out: pathlib.Path) -> NexmarkConfig:
    """The config the events under ``out`` were generated with."""
    path = out / CONFIG_FILE
    if not path.is_file():
        raise NotNexmarkDataError(
            f"{out} holds no Nexmark events ({CONFIG_FILE} is missing): "
            "run python -m cjob_bench nexmark generate --out DIR first"
        )
    return NexmarkConfig(**json.loads(path.read_text()))


def read_kind(out: pathlib.Path, kind: str) -> pa.Table:
    """Every event of ``kind`` under ``out``, generator by generator."""
    files = sorted((out / kind).glob("*.parquet"))
    return (
        pa.concat_tables([pq.read_table(f) for f in files])
        if files
        else (generator.SCHEMAS[kind].empty_table())
    )


def read_kind_rows(out: pathlib.Path, kind: str) -> int:
    """How many events of ``kind`` are under ``out`` (from the Parquet footers)."""
    return sum(pq.ParquetFile(f).metadata.num_rows for f in (out / kind).glob("*.parquet"))
