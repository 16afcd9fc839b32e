"""The suite's input: the same events as Parquet and JSON-lines files, and their exact answers.

Events: ``key`` int64 uniform over ``keys``, ``value`` int64 in [0, 1000),
``ts`` int64 event time (milliseconds, increasing), ``kind`` one of
:data:`KINDS` uniformly (W3 keeps ``kind == "buy"``). Written once per run
as ``files`` Parquet files and as many JSON-lines files with the same rows.

>>> import tempfile, pathlib
>>> d = generate(pathlib.Path(tempfile.mkdtemp()), events=1000, keys=10, files=2, seed=1)
>>> sorted(p.name for p in d.parquet.iterdir())
['part-00000.parquet', 'part-00001.parquet']
>>> int(d.counts.sum()), int(d.buy_counts.sum()) < 1000
(1000, True)
"""

from __future__ import annotations

import dataclasses
import os
import pathlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

KINDS = ("view", "click", "buy", "scroll")
FILTER_KIND = "buy"
SCHEMA_DDL = "key LONG, value LONG, ts LONG, kind STRING"
ROW_GROUP = 131_072


@dataclasses.dataclass(frozen=True, slots=True)
class DataSet:
    """Where the files are and what every system must answer (index = key)."""

    parquet: pathlib.Path
    jsonl: pathlib.Path
    events: int
    keys: int
    files: int
    copies: int
    sums: np.ndarray
    counts: np.ndarray
    buy_counts: np.ndarray

    def expected(self, workload: str) -> np.ndarray:
        """The final per-key value of ``workload`` (W1 sum, W2 count, W3 and W3v filtered count)."""
        return {"W1": self.sums, "W2": self.counts, "W3": self.buy_counts, "W3v": self.buy_counts}[
            workload
        ]

    def replicated(self, directory: pathlib.Path, copies: int) -> DataSet:
        """The same files hard-linked ``copies`` times (long runs without more disk)."""
        parquet, jsonl = directory / "parquet", directory / "jsonl"
        for src, dst in ((self.parquet, parquet), (self.jsonl, jsonl)):
            dst.mkdir(parents=True)
            for path in sorted(src.iterdir()):
                for c in range(copies):
                    os.link(path, dst / f"c{c:03d}-{path.name}")
        return dataclasses.replace(
            self,
            parquet=parquet,
            jsonl=jsonl,
            events=self.events * copies,
            files=self.files * copies,
            copies=self.copies * copies,
            sums=self.sums * copies,
            counts=self.counts * copies,
            buy_counts=self.buy_counts * copies,
        )


def reads_json_lines(workload: str) -> bool:
    """W3 and W3v read the JSON-lines copy of the events, the others the Parquet one."""
    return workload in ("W3", "W3v")


def peer_workload(workload: str) -> str:
    """What the peers run for ``workload``: W3v is W3 written with batch functions, the
    same query on the same files."""
    return "W3" if workload == "W3v" else workload


def generate(directory: pathlib.Path, *, events: int, keys: int, files: int, seed: int) -> DataSet:
    parquet, jsonl = directory / "parquet", directory / "jsonl"
    parquet.mkdir(parents=True)
    jsonl.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    sums = np.zeros(keys, dtype=np.int64)
    counts = np.zeros(keys, dtype=np.int64)
    buys = np.zeros(keys, dtype=np.int64)
    bounds = np.linspace(0, events, files + 1).astype(np.int64)
    for f in range(files):
        n = int(bounds[f + 1] - bounds[f])
        key = rng.integers(0, keys, n, dtype=np.int64)
        value = rng.integers(0, 1000, n, dtype=np.int64)
        ts = 1_700_000_000_000 + np.arange(bounds[f], bounds[f + 1], dtype=np.int64)
        kind_idx = rng.integers(0, len(KINDS), n)
        kind = pa.DictionaryArray.from_arrays(pa.array(kind_idx, pa.int32()), list(KINDS))
        table = pa.table({"key": key, "value": value, "ts": ts, "kind": kind.cast(pa.string())})
        pq.write_table(table, parquet / f"part-{f:05d}.parquet", row_group_size=ROW_GROUP)
        _write_jsonl(table, jsonl / f"part-{f:05d}.jsonl")
        counts += np.bincount(key, minlength=keys)
        sums += np.bincount(key, weights=value, minlength=keys).astype(np.int64)
        buy = kind_idx == KINDS.index(FILTER_KIND)
        buys += np.bincount(key[buy], minlength=keys)
    return DataSet(parquet, jsonl, events, keys, files, 1, sums, counts, buys)


def _write_jsonl(table: pa.Table, path: pathlib.Path) -> None:
    """``{"key":…,"value":…,"ts":…,"kind":"…"}`` per line, built with Arrow compute."""
    parts: list[pa.Array | str] = []
    for i, name in enumerate(table.column_names):
        opener = "{" if i == 0 else ","
        col = table.column(name).combine_chunks()
        if pa.types.is_string(col.type):
            parts += [f'{opener}"{name}":"', col, '"']
        else:
            parts += [f'{opener}"{name}":', pc.cast(col, pa.string())]
    parts.append("}\n")
    arrays = [p if isinstance(p, pa.Array) else pa.scalar(p) for p in parts]
    lines = pc.binary_join_element_wise(*arrays, "")
    chunks = lines.chunks if isinstance(lines, pa.ChunkedArray) else [lines]
    with path.open("wb") as out:
        for chunk in chunks:
            large = chunk.cast(pa.large_string())  # one data buffer: the lines, back to back
            offsets = np.frombuffer(large.buffers()[1], dtype=np.int64)
            first, last = offsets[large.offset], offsets[large.offset + len(large)]
            out.write(memoryview(large.buffers()[2])[first:last])
