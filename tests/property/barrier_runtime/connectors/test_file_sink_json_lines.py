"""``FileSink`` writes each record as the line ``json.dumps`` gives it, whatever the records hold.

``json_lines`` encodes a whole part in one call and splits it at ``},{``;
strings, nested dicts and lists of dicts that contain that text must still
come out as one line per record, each equal to encoding the record alone.
"""

import datetime
import json

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from barrier_runtime.connectors import files
from barrier_runtime.core import json_text

TRICKY = st.sampled_from(["},{", "}", "{", ",", '"', "\\", "\n", "é", "},{}"])
TEXT = st.lists(st.one_of(TRICKY, st.text(max_size=4)), max_size=4).map("".join)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), TEXT)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=8,
)
RECORDS = st.lists(st.dictionaries(TEXT, VALUES, max_size=4), max_size=12)


def _one_by_one(records) -> str:
    return "".join(json.dumps(r, separators=(",", ":"), default=str) + "\n" for r in records)


@settings(max_examples=300)
@given(RECORDS)
def test_each_record_is_the_line_json_dumps_gives_it(records) -> None:
    text = files.json_lines(records)
    assert text == _one_by_one(records)
    assert [json.loads(line) for line in text.splitlines()] == json.loads(json.dumps(records))


def test_values_json_cannot_hold_are_written_as_their_text() -> None:
    day = datetime.date(2026, 11, 26)
    records = [{"day": day, "n": 1}, {"day": None, "n": 2}]
    assert files.json_lines(records) == '{"day":"2026-11-26","n":1}\n{"day":null,"n":2}\n'


def test_records_that_are_not_plain_dicts_are_encoded_one_by_one() -> None:
    class Row(dict):  # a dict subclass may encode differently: never split
        pass

    records = [Row(a=1), {"b": "},{"}]
    assert files.json_lines(records) == _one_by_one(records)


COLUMNS = st.sampled_from(
    [
        (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
        (pa.uint64(), st.integers(0, 2**64 - 1)),
        (pa.int8(), st.integers(-128, 127)),
        (pa.bool_(), st.booleans()),
        (pa.string(), TEXT),
        (pa.string(), st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126))),
        (pa.float64(), st.floats(allow_nan=False)),
        (pa.int64(), st.one_of(st.none(), st.integers())),
    ]
)
NAMES = st.one_of(st.sampled_from(["key", "count", "a b", 'q"', "é", "key"]), TEXT)


@st.composite
def batches(draw) -> pa.RecordBatch:
    rows = draw(st.integers(0, 6))
    columns = draw(st.lists(st.tuples(NAMES, COLUMNS), min_size=1, max_size=4))
    arrays, names = [], []
    for name, (kind, values) in columns:
        items = draw(st.lists(values, min_size=rows, max_size=rows))
        if kind == pa.int64():
            items = [v if v is None or -(2**63) <= v < 2**63 else 0 for v in items]
        arrays.append(pa.array(items, type=kind))
        names.append(name)
    batch = pa.RecordBatch.from_arrays(arrays, names=names)
    start = draw(st.integers(0, rows))
    return batch.slice(start)


@settings(max_examples=400)
@given(batches())
def test_a_batch_arrow_encodes_is_the_text_json_dumps_gives_its_rows(batch) -> None:
    text = json_text.json_lines(batch)
    names = batch.schema.names
    if text is not None:
        assert text.decode() == _one_by_one(batch.to_pylist())
        assert len(set(names)) == len(names)


def test_plain_integer_and_ascii_columns_are_encoded_by_arrow() -> None:
    batch = pa.record_batch({"key": [3, 4], "kind": ["buy", "view"], "ok": [True, False]})
    assert json_text.json_lines(batch) == _one_by_one(batch.to_pylist()).encode()
    for odd in ({"x": [1.5]}, {"x": ["é"]}, {"x": ['"']}, {"x": [None, 1]}, {"é": [1]}):
        assert json_text.json_lines(pa.record_batch(odd)) is None


def test_the_sink_keeps_rows_and_batches_in_the_order_they_were_written(tmp_path) -> None:
    sink = files.FileSink(str(tmp_path), roll_records=5)
    writer = sink.writer("out", 0, 1)
    writer.write([{"n": 0}, {"n": 1}])
    writer.write_batch(pa.record_batch({"n": [2, 3]}))
    writer.write_batch(pa.record_batch({"n": [4.5]}))  # as rows
    writer.write([{"n": 5}])
    writer.write_batch(pa.record_batch({"n": [6, 7, 8]}))
    transaction = writer.pre_commit(1)
    assert transaction is not None
    sink.commit(transaction)
    got = [r["n"] for r in sink.read_committed()]
    assert got == [0, 1, 2, 3, 4.5, 5, 6, 7, 8]
    assert len(sink.committed_files()) == 2  # rolled after the fifth record
