"""FileSource on a local directory and on a real S3 server: JSON lines, CSV, Parquet.

Round trips, resume from a mid-file position (Parquet across row groups),
malformed records (fail names file and line; skip counts and logs), file
selection, and a checkpointed job reading files with injected crashes.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import logging
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from barrier_runtime.api import Dataflow
from barrier_runtime.connectors.errors import MalformedRecordError
from barrier_runtime.connectors.file_source import FileSource
from barrier_runtime.connectors.files import FileSink
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.demo import count_event
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import (
    Crash,
    FaultInjector,
    FaultPoint,
    LocalExecutor,
    TestingSink,
    check_exactly_once,
)

BUCKET = "cjob-tests"
ROWS = [{"key": f"k{i % 7}", "seq": i, "amount": i * 1.5, "ok": i % 2 == 0} for i in range(250)]
TYPES = {"seq": "int", "amount": "float", "ok": "bool"}


def encode(fmt: str, rows: list[dict], row_group_size: int = 64) -> bytes:
    if fmt == "jsonl":
        return "".join(json.dumps(r) + "\n" for r in rows).encode()
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        return out.getvalue().encode()
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), sink, row_group_size=row_group_size)
    return sink.getvalue()


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def url(request, tmp_path) -> str:
    """An empty directory or S3 prefix, as a URL FileSource accepts."""
    if request.param == "local":
        path = tmp_path / "input"
        path.mkdir()
        return str(path)
    server = request.getfixturevalue("s3_env")
    return server.url(BUCKET, f"files-{uuid.uuid4().hex[:10]}")


def rows_of(batch) -> list[dict] | None:
    """A ``next_batch()`` result as rows (FileSource hands out Arrow batches, or rows)."""
    return batch.to_pylist() if isinstance(batch, pa.RecordBatch) else batch


def read_all(source: FileSource, partition: str, resume_from=None) -> tuple[list[dict], object]:
    part = source.open(partition, resume_from)
    rows: list[dict] = []
    try:
        while (batch := part.next_batch()) is not None:
            rows.extend(rows_of(batch))
        return rows, part.snapshot()
    finally:
        part.close()


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_round_trip(url: str, fmt: str) -> None:
    store = open_object_store(url)
    store.put(f"day=1/events.{fmt}", encode(fmt, ROWS[:100]))
    store.put(f"day=2/events.{fmt}", encode(fmt, ROWS[100:]))
    source = FileSource(url, batch_size=32, column_types=TYPES)

    assert source.partitions() == [f"day=1/events.{fmt}", f"day=2/events.{fmt}"]
    first, end1 = read_all(source, f"day=1/events.{fmt}")
    second, end2 = read_all(source, f"day=2/events.{fmt}")
    assert first + second == ROWS
    if fmt == "parquet":
        assert end2 == {"row_group": 3, "offset": 0}  # 150 rows in groups of 64: 3 groups
    else:
        assert (end1, end2) == (100, 150)
    # At the end position a partition is finished straight away.
    assert read_all(source, f"day=2/events.{fmt}", end2) == ([], end2)


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_resume_from_a_mid_file_position(url: str, fmt: str) -> None:
    open_object_store(url).put(f"events.{fmt}", encode(fmt, ROWS))
    source = FileSource(url, batch_size=50, column_types=TYPES)
    part = source.open(f"events.{fmt}", None)
    seen: list[dict] = []
    while len(seen) < 100:  # Parquet batches end at row-group boundaries (64 rows each)
        seen += rows_of(part.next_batch())
    position = part.snapshot()
    part.close()
    expected = {"row_group": 1, "offset": 50} if fmt == "parquet" else 100
    assert position == expected

    rest, _ = read_all(source, f"events.{fmt}", position)
    assert seen + rest == ROWS


def test_parquet_resume_at_every_row_group_boundary(tmp_path) -> None:
    (tmp_path / "t.parquet").write_bytes(encode("parquet", ROWS, row_group_size=50))
    source = FileSource(str(tmp_path), batch_size=50)
    for group in range(6):
        rows, end = read_all(source, "t.parquet", {"row_group": group, "offset": 0})
        assert rows == ROWS[group * 50 :]
        assert end == {"row_group": 5, "offset": 0}


def test_gzip_text_files_and_format_override(tmp_path) -> None:
    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(encode("jsonl", ROWS[:10])))
    (tmp_path / "b.log").write_bytes(encode("jsonl", ROWS[10:20]))
    assert read_all(FileSource(str(tmp_path), pattern="*.gz"), "a.jsonl.gz")[0] == ROWS[:10]
    assert read_all(FileSource(str(tmp_path), format="jsonl"), "b.log")[0] == ROWS[10:20]
    with pytest.raises(Exception, match=r"cannot tell the format of 'b.log'"):
        FileSource(str(tmp_path)).open("b.log", None)


def test_selection_hides_staging_and_dot_files_and_applies_the_pattern(tmp_path) -> None:
    for name in [
        "a.csv",
        "b.jsonl",
        "sub/c.jsonl",
        "_staging/x.jsonl",
        ".hidden.jsonl",
        "sub/.tmp/y.jsonl",
    ]:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('{"a": 1}\n')
    assert FileSource(str(tmp_path)).partitions() == ["a.csv", "b.jsonl", "sub/c.jsonl"]
    assert FileSource(str(tmp_path), pattern="*.jsonl").partitions() == ["b.jsonl", "sub/c.jsonl"]
    assert FileSource(str(tmp_path), pattern="sub/*").partitions() == ["sub/c.jsonl"]


def test_malformed_json_line_names_the_file_and_line(url: str) -> None:
    body = b'{"n": 1}\n{"n": 2}\n\n{"n": 3,}\n[4]\n{"n": 5}\n'
    store = open_object_store(url)
    store.put("in/bad.jsonl", body)
    with pytest.raises(MalformedRecordError) as info:
        read_all(FileSource(url), "in/bad.jsonl")
    message = str(info.value)
    assert "in/bad.jsonl line 4" in message and "not valid JSON" in message
    # The file as one URL: s3://bucket/prefix/in/bad.jsonl or file:///dir/in/bad.jsonl
    # (never "s3://bucket/prefix at http://host:port/in/bad.jsonl").
    where = store.describe().split(" at ")[0]
    assert f"malformed record in {where}/in/bad.jsonl line 4: " in message, message
    assert "on_error='skip'" in message


def test_malformed_records_can_be_skipped_but_never_silently(tmp_path, caplog) -> None:
    (tmp_path / "bad.jsonl").write_bytes(b'{"n": 1}\nnot json\n[2]\n{"n": 3}\n\xff\xfe\n{"n": 4}\n')
    source = FileSource(str(tmp_path), on_error="skip")
    part = source.open("bad.jsonl", None)
    with caplog.at_level(logging.WARNING, logger="barrier_runtime.connectors.file_source"):
        rows = rows_of(part.next_batch())
        assert part.next_batch() is None
    assert rows == [{"n": 1}, {"n": 3}, {"n": 4}]
    assert part.skipped == 3
    assert part.snapshot() == 6  # skipped records count as consumed
    logged = caplog.text
    assert "bad.jsonl line 2" in logged and "bad.jsonl line 3" in logged
    assert "bad.jsonl line 5" in logged and "not valid UTF-8" in logged
    assert "skipped 3 malformed record(s)" in logged
    rejected = part.rejected()  # what the reader counts, or sends to dead letters
    assert [(r.position.rsplit("/", 1)[-1], r.raw) for r in rejected] == [
        ("bad.jsonl line 2", "not json"),
        ("bad.jsonl line 3", "[2]"),
        ("bad.jsonl line 5", "\ufffd\ufffd"),
    ]
    assert rejected[0].error.startswith("not valid JSON") and part.rejected() == []


def test_malformed_csv_rows(tmp_path) -> None:
    (tmp_path / "x.csv").write_text("key,seq\na,1\nb,2,extra\nc,three\nd,4\n")
    with pytest.raises(
        MalformedRecordError, match=r"x.csv line 3: has 3 fields, the header names 2"
    ):
        read_all(FileSource(str(tmp_path), column_types={"seq": "int"}), "x.csv")
    source = FileSource(str(tmp_path), column_types={"seq": "int"}, on_error="skip")
    part = source.open("x.csv", None)
    assert rows_of(part.next_batch()) == [{"key": "a", "seq": 1}, {"key": "d", "seq": 4}]
    assert part.skipped == 2


def test_corrupt_parquet_file_is_named(tmp_path) -> None:
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(MalformedRecordError, match=r"broken.parquet.*not readable as Parquet"):
        read_all(FileSource(str(tmp_path)), "broken.parquet")


def test_a_job_reads_files_exactly_once_through_crashes(s3_env, tmp_path) -> None:
    """Three files (one per format) → keyed running count → FileSink on S3, with crashes."""
    keys, per_key = 30, 400
    run = uuid.uuid4().hex[:8]
    in_url = s3_env.url(BUCKET, f"{run}/in")
    store = open_object_store(in_url)
    for index, fmt in enumerate(["jsonl", "csv", "parquet"]):
        owned = [k for k in range(keys) if k % 3 == index]
        rows = [{"key": f"k{k}", "seq": s} for s in range(per_key) for k in owned]
        store.put(f"events-{index}.{fmt}", encode(fmt, rows, row_group_size=500))

    def flow(sink) -> Dataflow:
        flow = Dataflow("files-count")
        source = FileSource(in_url, batch_size=100, column_types={"seq": "int"})
        counted = flow.source("events", source).key_by("by-key", "key")
        counted.stateful_map("count", count_event).map_batches("slow", _slow).sink("out", sink)
        return flow

    clean = TestingSink()
    LocalExecutor(
        flow(clean),
        parallelism=2,
        store=CheckpointStore(open_object_store(str(tmp_path / "c")), "j"),
    ).run()
    assert len(clean.output) == keys * per_key

    out_url = s3_env.url(BUCKET, f"{run}/out")
    P = FaultPoint
    injector = FaultInjector(
        [
            Crash(P.PROCESSING, subtask=0, after_records=3_000),
            Crash(P.PROCESSING, subtask=1, after_records=2_000, attempt=1),
            Crash(P.COMMIT, checkpoint_id=4, attempt=2),
        ]
    )
    result = LocalExecutor(
        flow(FileSink(out_url)),
        parallelism=2,
        store=CheckpointStore(open_object_store(str(tmp_path / "cp")), "default/files"),
        config=CheckpointConfig(interval=0.05),
        fault_injector=injector,
    ).run()
    report = check_exactly_once(clean.output, FileSink(out_url).read_committed())
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0), report
    assert len(injector.fired) >= 2, injector.fired
    assert 2 <= result.restarts <= len(injector.fired), result.failures


def _slow(batch: pa.RecordBatch) -> pa.RecordBatch:
    import time

    time.sleep(0.002)
    return batch


def test_at_most_max_open_files_are_held_at_once(tmp_path) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.jsonl").write_bytes(encode("jsonl", ROWS[:20]))
    source = FileSource(str(tmp_path), batch_size=10, max_open_files=1)
    a, b = source.open("a.jsonl", None), source.open("b.jsonl", None)
    assert rows_of(a.next_batch()) == ROWS[:10]
    assert b.next_batch() == []  # waits: a holds the only slot
    assert (
        rows_of(a.next_batch()) == ROWS[10:20] and a.next_batch() is None
    )  # a ends, frees its slot
    assert rows_of(b.next_batch()) == ROWS[:10]
    b.close()
    a.close()
