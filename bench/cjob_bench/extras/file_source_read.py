"""FileSource read speed: the same events as Parquet, CSV and JSON lines; prints JSON.

Two measurements, each repeated ``--repeats`` times with the variants
interleaved (so load from other processes hits them alike), medians reported:

* ``read``: in-process, every file of a format read through
  :class:`FileSource` partitions (``next_batch`` until the end) versus pyarrow
  reading the same files directly (``pq.read_table``, ``pyarrow.csv.read_csv``,
  ``pyarrow.json.read_json``);
* ``w1``: workload W1 (``key_by("key").sum("value")``, vectorised) run end to
  end by the in-process :class:`~barrier_runtime.testing.LocalExecutor` at
  parallelism ``--parallelism`` with checkpoints every ``--interval`` seconds,
  reading the files through FileSource, next to the same job over the
  Arrow-native :class:`ColumnarGeneratorSource` (the ceiling); with the
  median checkpoint duration of each run.

    PYTHONPATH=runtime/src:bench .venv/bin/python -m cjob_bench run file-source-read --events 4000000
"""

from __future__ import annotations

import argparse
import functools
import json
import pathlib
import statistics
import tempfile
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from barrier_runtime.api import Dataflow
from barrier_runtime.api import sources as sources_mod
from barrier_runtime.connectors import file_formats
from barrier_runtime.connectors.columnar_generator import ColumnarGeneratorSource
from barrier_runtime.connectors.discard import DiscardSink
from barrier_runtime.connectors.file_source import FileSource
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor

FORMATS = ("parquet", "csv", "jsonl")
TYPES: dict[str, file_formats.ColumnType] = {"key": "int", "value": "int"}


def write_inputs(root: pathlib.Path, events: int, files: int, keys: int) -> None:
    rng = np.random.default_rng(1)
    per_file = events // files
    for i in range(files):
        table = pa.table(
            {
                "key": rng.integers(0, keys, per_file, dtype=np.int64),
                "value": rng.integers(0, 1000, per_file, dtype=np.int64),
            }
        )
        for fmt in FORMATS:
            (root / fmt).mkdir(exist_ok=True)
        pq.write_table(table, root / "parquet" / f"part-{i}.parquet", row_group_size=1 << 20)
        pa_csv.write_csv(table, root / "csv" / f"part-{i}.csv")
        with open(root / "jsonl" / f"part-{i}.jsonl", "w") as out:
            for k, v in zip(table["key"].to_numpy(), table["value"].to_numpy(), strict=True):
                out.write(f'{{"key": {k}, "value": {v}}}\n')


def source_of(root: pathlib.Path, fmt: str, batch_size: int) -> FileSource:
    return FileSource(str(root / fmt), batch_size=batch_size, column_types=TYPES)


def read_through_file_source(root: pathlib.Path, fmt: str, batch_size: int) -> int:
    source = source_of(root, fmt, batch_size)
    count = 0
    for name in source.partitions():
        part = source.open(name, None)
        while (batch := part.next_batch()) is not None:
            count += batch.num_rows if isinstance(batch, pa.RecordBatch) else len(batch)
        part.close()
    return count


def read_with_pyarrow(root: pathlib.Path, fmt: str, batch_size: int) -> int:
    del batch_size
    count = 0
    for path in sorted((root / fmt).iterdir()):
        if fmt == "parquet":
            count += pq.read_table(path).num_rows
        elif fmt == "csv":
            types = {"key": pa.int64(), "value": pa.int64()}
            options = pa_csv.ConvertOptions(column_types=types)
            count += pa_csv.read_csv(path, convert_options=options).num_rows
        else:
            count += pa_json.read_json(path).num_rows
    return count


def timed(fn: Callable[[], int]) -> tuple[float, int]:
    started = time.perf_counter()
    count = fn()
    return time.perf_counter() - started, count


def run_w1(
    source: sources_mod.Source, parallelism: int, interval: float
) -> tuple[float, float | None]:
    flow = Dataflow("w1-files")
    flow.source("events", source).key_by("by-key", "key").sum("sum", "value").sink(
        "out", DiscardSink()
    )
    store = CheckpointStore(open_object_store(tempfile.mkdtemp(prefix="bench-fs-")), "bench/job")
    executor = LocalExecutor(
        flow,
        parallelism=parallelism,
        store=store,
        config=CheckpointConfig(interval=interval, timeout=120),
    )
    started = time.perf_counter()
    executor.run()
    elapsed = time.perf_counter() - started
    durations = [
        e.duration
        for e in executor.coordinator.stats().history
        if e.duration is not None and e.status.value == "completed"
    ]
    return elapsed, (statistics.median(durations) if durations else None)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=4_000_000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--batch-size", type=int, default=65_536)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-w1", action="store_true")
    parser.add_argument("--formats", default=",".join(FORMATS), help="comma-separated subset")
    ns = parser.parse_args(argv)
    root = pathlib.Path(tempfile.mkdtemp(prefix="bench-file-source-"))
    write_inputs(root, ns.events, ns.files, ns.keys)
    events = ns.events // ns.files * ns.files
    reads: dict[str, list[float]] = {}
    formats = [f for f in ns.formats.split(",") if f in FORMATS]
    for _ in range(ns.repeats):
        for fmt in formats:
            for name, reader in (
                ("file_source", read_through_file_source),
                ("pyarrow", read_with_pyarrow),
            ):
                elapsed, count = timed(functools.partial(reader, root, fmt, ns.batch_size))
                assert count == events, (fmt, name, count)
                reads.setdefault(f"{fmt}/{name}", []).append(events / elapsed)
    result: dict[str, object] = {
        "events": events,
        "files": ns.files,
        "batch_size": ns.batch_size,
        "read_events_per_s": {k: round(statistics.median(v)) for k, v in reads.items()},
    }
    if not ns.skip_w1:
        w1: dict[str, list[float]] = {}
        checkpoints: dict[str, list[float]] = {}
        for _ in range(ns.repeats):
            variants: list[tuple[str, sources_mod.Source]] = [
                (f"file_source/{fmt}", source_of(root, fmt, ns.batch_size)) for fmt in formats
            ]
            variants.append(
                (
                    "columnar_generator",
                    ColumnarGeneratorSource(
                        events=events, keys=ns.keys, partitions=ns.files, batch_size=ns.batch_size
                    ),
                )
            )
            for name, source in variants:
                elapsed, p50 = run_w1(source, ns.parallelism, ns.interval)
                w1.setdefault(name, []).append(events / elapsed)
                if p50 is not None:
                    checkpoints.setdefault(name, []).append(p50)
        result["w1_events_per_s"] = {k: round(statistics.median(v)) for k, v in w1.items()}
        result["w1_checkpoint_p50_s"] = {
            k: round(statistics.median(v), 3) for k, v in checkpoints.items()
        }
        result["parallelism"] = ns.parallelism
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
