"""FileSource's Arrow readers give exactly what the per-line parsers give, and resume exactly.

Random JSON-lines and CSV files (well-formed records of every column type,
empty strings, unicode, quoted CSV, nulls and missing keys, whole-number
floats, date-like strings, blank lines and malformed records) are read by
:func:`arrow_formats.text_pieces` with tiny blocks, so Arrow blocks and
per-line fallback blocks interleave, and compared value for value *and type
for type* (``1`` is not ``1.0``; a missing key is not ``None``) with
:func:`file_formats.iter_items`. Then whole files (plain, gzip, Parquet) are
read through :class:`FileSource` partitions cut at random points and resumed
from the snapshot: the two halves together are the single read.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import pathlib
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from barrier_runtime.connectors import arrow_formats, file_formats
from barrier_runtime.connectors.file_source import FileSource

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TEXT = st.text(alphabet=st.sampled_from(list("ab z,\"'\\\n\t;é€😀0-1.x")), max_size=6)
JSON_VALUES = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.5, -2.25, 1.0, 1e300]),
    TEXT,
    st.sampled_from(["2024-01-02", "2024-01-02T03:04:05", ""]),
    st.booleans(),
    st.none(),
    st.lists(st.integers(-5, 5), max_size=3),
    st.fixed_dictionaries({"x": st.integers(0, 9)}, optional={"y": TEXT}),
)
JSON_RECORDS = st.dictionaries(st.sampled_from(["a", "b", "c"]), JSON_VALUES, max_size=3)
UNIFORM_RECORDS = st.fixed_dictionaries(
    {
        "k": TEXT,
        "n": st.integers(-(2**40), 2**40),
        "f": st.sampled_from([0.5, -1.25, 3.75, 0.5, 2, 7.0]),
    }
)
JSON_LINES = st.one_of(
    JSON_RECORDS.map(json.dumps),
    UNIFORM_RECORDS.map(json.dumps),
    UNIFORM_RECORDS.map(json.dumps),
    UNIFORM_RECORDS.map(json.dumps),
    st.tuples(UNIFORM_RECORDS, UNIFORM_RECORDS).map(lambda t: json.dumps(t[0]) + json.dumps(t[1])),
    st.sampled_from(
        [
            "",
            "  ",
            "[1, 2]",
            '{"a": 1}{"a": 2}',
            '{"a": ',
            "7",
            '{"a": 1, "a": 2}',
            '{"a": 1, "b":\n{"x": 2}}',
            ' {"a": 3} ',
        ]
    ),
)
CSV_COLUMNS = ("k", "n", "f", "b")
CSV_TYPES: dict[str, file_formats.ColumnType] = {"n": "int", "f": "float", "b": "bool"}
PLAIN = st.text(alphabet=st.sampled_from(list("ab z'\\\t;é€😀0-1.x")), max_size=6)
VALID_CSV_FIELDS = {
    "k": PLAIN,
    "n": st.one_of(st.integers(-1000, 1000).map(str), st.just("")),
    "f": st.one_of(st.floats(allow_nan=False).map(repr), st.just("")),
    "b": st.sampled_from(["true", "False", "YES", "n", "1", "0", ""]),
}
ODD_CSV_FIELDS = {
    "k": PLAIN,
    "n": st.sampled_from(["0x1F", "+3", " 4", "x", "1_0", str(2**70), "0X2a"]),
    "f": st.sampled_from(["1e5", "inf", "nan", "1_0.5", "0x1p3", "-0.0"]),
    "b": st.sampled_from(["maybe", " t", "tRuE"]),
}
CSV_ROWS = st.one_of(
    *[st.fixed_dictionaries(VALID_CSV_FIELDS).map(lambda r: [r[c] for c in CSV_COLUMNS])] * 20,
    st.fixed_dictionaries({**VALID_CSV_FIELDS, "n": ODD_CSV_FIELDS["n"]}).map(
        lambda r: [r[c] for c in CSV_COLUMNS]
    ),
    st.fixed_dictionaries({**VALID_CSV_FIELDS, "f": ODD_CSV_FIELDS["f"]}).map(
        lambda r: [r[c] for c in CSV_COLUMNS]
    ),
    st.fixed_dictionaries(ODD_CSV_FIELDS).map(lambda r: [r[c] for c in CSV_COLUMNS]),
    st.fixed_dictionaries({**VALID_CSV_FIELDS, "k": TEXT}).map(
        lambda r: [r[c] for c in CSV_COLUMNS]
    ),
    st.sampled_from([[], ["only"], ["a", "1", "2.5", "true", "extra"]]),
)


def outcome(pieces) -> str:
    """Records (with their types and keys) and malformed records, in order, as comparable text."""
    out: list[object] = []
    for piece in pieces:
        if isinstance(piece, pa.RecordBatch):
            out.extend(["ok", row] for row in piece.to_pylist())
        elif piece.record is not None:
            out.append(["ok", piece.record])
        else:
            out.append(["bad", piece.line, piece.problem, piece.raw])
    return json.dumps(out, sort_keys=True)


def typed(value: object) -> object:
    """``value`` with every number tagged by its type, so that 1 and 1.0 compare unequal."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return [type(value).__name__, value]


def same_reads(data: bytes, fmt, skip: int, csv_options=None) -> None:
    expected = list(file_formats.iter_items(data, fmt, skip=skip, csv_options=csv_options))
    got = list(
        arrow_formats.text_pieces(
            data, fmt, skip=skip, csv_options=csv_options, batch_size=3, block_bytes=64
        )
    )
    assert outcome(got) == outcome(expected)
    rows = [
        r for p in got for r in (p.to_pylist() if isinstance(p, pa.RecordBatch) else [p.record])
    ]
    typed_rows = json.dumps([typed(r) for r in rows], sort_keys=True)
    assert typed_rows == json.dumps([typed(i.record) for i in expected], sort_keys=True)


def csv_text(rows: list[list[str]], header: bool = True, crlf: bool = False) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n" if crlf else "\n")
    if header:
        writer.writerow(CSV_COLUMNS)
    writer.writerows(rows)
    return out.getvalue().encode()


@SETTINGS
@given(lines=st.lists(JSON_LINES, max_size=40), skip=st.integers(0, 45), crlf=st.booleans())
def test_json_lines_read_as_arrow_equal_the_per_line_parser(lines, skip, crlf) -> None:
    data = ("\r\n" if crlf else "\n").join(lines).encode()
    same_reads(data, "jsonl", skip)


DRIFTING = st.sampled_from(
    [
        1,
        2**40,
        -3,
        0.5,
        7.0,
        2,
        "x",
        "2024-01-02",
        True,
        None,
        [1],
        [1.5],
        {"x": 1},
        {"x": 1, "y": "z"},
    ]
)
"""Values one field takes in turn, run after run, so that blocks differ in their types."""
RUNS = st.lists(
    st.tuples(
        st.dictionaries(st.sampled_from(["a", "b", "c"]), DRIFTING, min_size=1, max_size=3),
        st.integers(1, 12),
    ),
    max_size=6,
)


@SETTINGS
@given(runs=RUNS, skip=st.integers(0, 20), block_bytes=st.sampled_from([16, 64, 256]))
def test_json_blocks_whose_types_drift_from_the_block_before_read_exactly(
    runs, skip, block_bytes
) -> None:
    """Blocks read one after another while a field changes type, goes missing or grows a
    nested field: the records stay what json.loads gives."""
    lines = [json.dumps(record) for record, times in runs for _ in range(times)]
    data = "\n".join(lines).encode()
    expected = list(file_formats.iter_items(data, "jsonl", skip=skip))
    got = list(
        arrow_formats.text_pieces(data, "jsonl", skip=skip, batch_size=5, block_bytes=block_bytes)
    )
    assert outcome(got) == outcome(expected)
    rows = [
        r for p in got for r in (p.to_pylist() if isinstance(p, pa.RecordBatch) else [p.record])
    ]
    typed_rows = json.dumps([typed(r) for r in rows], sort_keys=True)
    assert typed_rows == json.dumps([typed(i.record) for i in expected], sort_keys=True)


def test_a_file_of_one_shape_is_read_as_arrow_in_every_block() -> None:
    data = b"".join(
        json.dumps({"k": f"k{i}", "n": i, "kind": "buy"}).encode() + b"\n" for i in range(400)
    )
    pieces = list(arrow_formats.text_pieces(data, "jsonl", batch_size=1000, block_bytes=1024))
    assert len(pieces) > 10 and all(isinstance(p, pa.RecordBatch) for p in pieces)
    assert [r["n"] for p in pieces for r in p.to_pylist()] == list(range(400))


@SETTINGS
@given(
    rows=st.lists(CSV_ROWS, max_size=40),
    skip=st.integers(0, 45),
    crlf=st.booleans(),
    blank=st.integers(0, 40),
)
def test_csv_read_as_arrow_equals_the_per_line_parser(rows, skip, crlf, blank) -> None:
    text = csv_text(rows, crlf=crlf)
    lines = text.split(b"\n")
    data = b"\n".join([*lines[:blank], b"", *lines[blank:]]) if blank < len(lines) else text
    same_reads(data, "csv", skip, file_formats.CsvOptions(column_types=CSV_TYPES))
    plain = file_formats.CsvOptions(columns=CSV_COLUMNS)
    same_reads(csv_text(rows, header=False), "csv", skip, plain)


def test_clean_files_are_read_as_arrow_batches() -> None:
    jsonl = b"".join(
        json.dumps({"k": f"k{i}", "n": i, "f": i + 0.5}).encode() + b"\n" for i in range(9)
    )
    csv_data = csv_text([[f"k{i}", str(i), "0.5", "true"] for i in range(9)])
    for data, fmt, options in (
        (jsonl, "jsonl", None),
        (csv_data, "csv", file_formats.CsvOptions(column_types=CSV_TYPES)),
    ):
        pieces = list(arrow_formats.text_pieces(data, fmt, csv_options=options, batch_size=4))
        assert [p.num_rows for p in pieces] == [4, 4, 1]
        assert all(isinstance(p, pa.RecordBatch) for p in pieces)
    row = next(
        arrow_formats.text_pieces(
            csv_data, "csv", csv_options=file_formats.CsvOptions(column_types=CSV_TYPES)
        )
    ).to_pylist()[0]
    assert row == {"k": "k0", "n": 0, "f": 0.5, "b": True}


def write_files(root: pathlib.Path, records: list[dict]) -> None:
    lines = [json.dumps(r) for r in records]
    lines[len(lines) // 3 :: 7] = ["not json"] * len(lines[len(lines) // 3 :: 7])
    (root / "a.jsonl").write_text("\n".join(lines) + "\n")
    (root / "b.jsonl.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    table = pa.Table.from_pylist(records)
    text = "k,n,f\n" + "".join(f"{r['k']},{r['n']},{r['f']}\n" for r in records)
    (root / "c.csv").write_text(text)
    (root / "d.csv.gz").write_bytes(gzip.compress(text.encode()))
    pq.write_table(table, root / "e.parquet", row_group_size=7)


def read(part, limit: int | None = None) -> list[dict]:
    rows: list[dict] = []
    taken = 0
    while (limit is None or taken < limit) and (batch := part.next_batch()) is not None:
        rows.extend(batch.to_pylist() if isinstance(batch, pa.RecordBatch) else batch)
        taken += 1
    return rows


@SETTINGS
@given(
    count=st.integers(1, 60),
    batch_size=st.integers(1, 9),
    cut=st.integers(0, 30),
    name=st.sampled_from(["a.jsonl", "b.jsonl.gz", "c.csv", "d.csv.gz", "e.parquet"]),
    block_bytes=st.sampled_from([40, 200, arrow_formats.BLOCK_BYTES]),
)
def test_a_read_cut_anywhere_and_resumed_equals_a_single_read(
    count, batch_size, cut, name, block_bytes
) -> None:
    records = [{"k": f"k{i % 5}", "n": i, "f": i + 0.25} for i in range(count)]
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        patch.setattr(arrow_formats, "BLOCK_BYTES", block_bytes)  # Arrow and per-line blocks mix
        root = pathlib.Path(tmp)
        write_files(root, records)
        source = FileSource(
            str(root),
            batch_size=batch_size,
            on_error="skip",
            column_types={"n": "int", "f": "float"},
        )
        whole = read(source.open(name, None))
        first = source.open(name, None)
        before = read(first, cut)
        position = json.loads(json.dumps(first.snapshot()))
        first.close()
        after = read(source.open(name, position))
    assert before + after == whole
    assert len(whole) >= count - count // 7 - 1


def test_numbers_arrow_reads_but_python_does_not_stay_malformed() -> None:
    rows = [[f"k{i}", str(i), "0.5", "true"] for i in range(40)]
    rows[5][1], rows[30][2] = "0x1F", "0x1p3"
    data = csv_text(rows)
    options = file_formats.CsvOptions(column_types=CSV_TYPES)
    pieces = list(arrow_formats.text_pieces(data, "csv", csv_options=options, block_bytes=64))
    expected = list(file_formats.iter_items(data, "csv", csv_options=options))
    assert outcome(pieces) == outcome(expected)
    assert [i.line for i in expected if i.record is None] == [7, 32]
    assert any(isinstance(p, pa.RecordBatch) for p in pieces)


def test_json_whole_numbers_among_floats_and_two_records_on_a_line_read_as_python_does() -> None:
    lines = [json.dumps({"k": f"k{i}", "v": i + 0.5}) for i in range(30)]
    lines[3] = json.dumps({"k": "int", "v": 2})
    lines[20] = lines[21] + lines[22]
    data = "\n".join(lines).encode()
    pieces = list(arrow_formats.text_pieces(data, "jsonl", block_bytes=100))
    expected = list(file_formats.iter_items(data, "jsonl"))
    assert outcome(pieces) == outcome(expected)
    assert any(isinstance(p, pa.RecordBatch) for p in pieces)
    assert [i.line for i in expected if i.record is None] == [21]


def test_a_blank_line_does_not_hide_a_line_of_two_records() -> None:
    data = b'{"a": 1}\n\n{"a": 2}{"a": 3}\n{"a": 4}\n'
    pieces = list(arrow_formats.text_pieces(data, "jsonl"))
    assert outcome(pieces) == outcome(file_formats.iter_items(data, "jsonl"))
    assert [p.line for p in pieces if isinstance(p, file_formats.Item) and p.record is None] == [3]


def test_an_object_spread_over_lines_stays_malformed_even_when_row_counts_agree() -> None:
    """Arrow reads an object that spans two lines as one row, and a line of two objects as
    two: three rows from three lines, none of which the per-line parser accepts."""
    data = b'{"a": 1, "b":\n{"x": 1}}\n{"a": 2, "b": {"x": 3}}{"a": 3, "b": {"x": 4}}\n'
    pieces = list(arrow_formats.text_pieces(data, "jsonl"))
    assert outcome(pieces) == outcome(file_formats.iter_items(data, "jsonl"))
    assert [p.line for p in pieces if p.record is None] == [1, 2, 3]


def test_date_strings_stay_strings_and_still_read_as_arrow() -> None:
    lines = [json.dumps({"at": f"2024-01-{i % 28 + 1:02d}T00:00:00", "n": i}) for i in range(50)]
    data = "\n".join(lines).encode()
    pieces = list(arrow_formats.text_pieces(data, "jsonl", block_bytes=200))
    assert outcome(pieces) == outcome(file_formats.iter_items(data, "jsonl"))
    assert all(isinstance(p, pa.RecordBatch) for p in pieces)


def test_text_after_a_closing_quote_stays_malformed() -> None:
    good = csv_text([[f"k,{i}", str(i), "0.5", "true"] for i in range(5)])
    data = good + b'"b"c,1,0.5,true\n"d",2,0.5,true\n'
    options = file_formats.CsvOptions(column_types=CSV_TYPES)
    pieces = list(arrow_formats.text_pieces(data, "csv", csv_options=options))
    expected = list(file_formats.iter_items(data, "csv", csv_options=options))
    assert outcome(pieces) == outcome(expected)
    assert [(i.line, i.problem[:13]) for i in expected if i.record is None] == [
        (7, "not valid CSV")
    ]
    quoted = list(arrow_formats.text_pieces(good, "csv", csv_options=options))
    assert all(isinstance(p, pa.RecordBatch) for p in quoted)


def test_a_file_source_batch_is_not_cut_short_by_a_one_mebibyte_block(tmp_path) -> None:
    """Lines of ~120 bytes: 1 MiB holds ~8,700 of them; 30,000-record batches come nearly
    whole (a block holds a little under a batch), never as slivers."""
    line = json.dumps({"k": "x" * 90, "n": 0}) + "\n"
    (tmp_path / "a.jsonl").write_text(line * 70_000)
    source = FileSource(str(tmp_path), batch_size=30_000)
    part = source.open("a.jsonl", None)
    sizes = []
    while (batch := part.next_batch()) is not None:
        assert isinstance(batch, pa.RecordBatch)
        sizes.append(batch.num_rows)
    assert sum(sizes) == 70_000
    assert all(29_000 <= n <= 30_000 for n in sizes[:-1]), sizes
