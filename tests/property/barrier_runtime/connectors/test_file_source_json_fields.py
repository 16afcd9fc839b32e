"""JSON lines read with declared fields: Arrow gives exactly what the per-line parser gives.

Random files whose records hold the declared fields with values of the right
type, of the wrong type, ``null`` or missing, next to undeclared fields of
any shape (nested, non-UTF-8, invalid JSON), blank lines and lines of two
records, are read by :func:`arrow_formats.text_pieces` with tiny blocks and
compared, key order and types included, with :func:`file_formats.jsonl_items`.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from barrier_runtime.connectors import arrow_formats, file_formats
from barrier_runtime.connectors.file_source import FileSource

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FIELDS: dict[str, file_formats.ColumnType] = {"k": "str", "n": "int", "f": "float", "b": "bool"}
RIGHT = {
    "k": st.text(alphabet=st.sampled_from(list('ab z"\\\té€😀0')), max_size=5),
    "n": st.integers(-(2**63), 2**63 - 1),
    "f": st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-(2**53), 2**53)),
    "b": st.booleans(),
}
WRONG = st.sampled_from(["7", 1.5, 2.0, True, 2**70, [1], {"x": 1}, "true", 10**400])
UNDECLARED = st.sampled_from([[1, {"x": "y"}], {"deep": {"er": [None]}}, "é", 1e300, None, True])
RECORDS = st.fixed_dictionaries(
    {},
    optional={
        **{name: st.one_of(*[value] * 6, st.none(), WRONG) for name, value in RIGHT.items()},
        "extra": UNDECLARED,
    },
)
ODD_LINES = st.sampled_from(
    [
        "",
        "  ",
        "[1]",
        "7",
        '{"k": "a"}{"k": "b"}',
        '{"n": 1, "n": 2}',
        '{"k": "x", "junk": [1, }',
        '{"k": "x", "extra": "\xff"}',
        '{"k": "x", "\xff": 1}',
        '{"n": 1e3}',
        '{"f": NaN}',
        "{}",
    ]
)
LINES = st.one_of(*[RECORDS.map(json.dumps)] * 8, ODD_LINES)


def pieces_as_text(pieces) -> str:
    """Records (key order and number types kept) and malformed records, in order."""
    out: list[object] = []
    for piece in pieces:
        if isinstance(piece, pa.RecordBatch):
            out.extend(["ok", list(tagged(r).items())] for r in piece.to_pylist())
        elif piece.record is not None:
            out.append(["ok", list(tagged(piece.record).items())])
        else:
            out.append(["bad", piece.line, piece.problem, piece.raw])
    return json.dumps(out)


def tagged(record: dict) -> dict:
    return {k: [type(v).__name__, v] for k, v in record.items()}


def encode(lines: list[str]) -> bytes:
    # "\xff" in ODD_LINES stands for a byte that is not UTF-8
    return "\n".join(lines).encode("utf-8").replace("\xff".encode(), b"\xff")


@SETTINGS
@given(
    lines=st.lists(LINES, max_size=40),
    skip=st.integers(0, 45),
    block_bytes=st.sampled_from([32, 128, 1024]),
)
def test_declared_fields_read_as_arrow_equal_the_per_line_parser(lines, skip, block_bytes) -> None:
    data = encode(lines)
    expected = list(file_formats.jsonl_items(data, skip, fields=FIELDS))
    got = list(
        arrow_formats.text_pieces(
            data, "jsonl", skip=skip, json_fields=FIELDS, batch_size=3, block_bytes=block_bytes
        )
    )
    assert pieces_as_text(got) == pieces_as_text(expected)


def test_clean_blocks_are_read_by_arrow_with_only_the_declared_fields_in_their_order() -> None:
    lines = [json.dumps({"n": i, "k": f"k{i}", "skip": {"me": [i]}, "f": i}) for i in range(200)]
    data = "\n".join(lines).encode()
    pieces = list(arrow_formats.text_pieces(data, "jsonl", json_fields=FIELDS, block_bytes=512))
    assert len(pieces) > 5 and all(isinstance(p, pa.RecordBatch) for p in pieces)
    assert pieces[0].schema.names == ["k", "n", "f", "b"]
    assert pieces[0].to_pylist()[1] == {"k": "k1", "n": 1, "f": 1.0, "b": None}


def test_a_value_of_another_type_is_one_malformed_record_and_its_neighbours_stay() -> None:
    lines = [json.dumps({"k": f"k{i}", "n": i}) for i in range(50)]
    lines[30] = json.dumps({"k": "k30", "n": "thirty"})
    pieces = list(
        arrow_formats.text_pieces(
            "\n".join(lines).encode(), "jsonl", json_fields={"n": "int"}, block_bytes=128
        )
    )
    bad = [p for p in pieces if isinstance(p, file_formats.Item) and p.record is None]
    assert [(p.line, p.problem) for p in bad] == [(31, "field 'n' is a JSON string, not an int")]
    ns = [
        r["n"]
        for p in pieces
        for r in (
            p.to_pylist() if isinstance(p, pa.RecordBatch) else [p.record] if p.record else []
        )
    ]
    assert ns == [i for i in range(50) if i != 30]


def test_an_integer_too_large_for_a_float_is_malformed_whichever_parser_reads_it() -> None:
    """Arrow reads ``1000…0`` (400 digits) into a double as infinity; ``float()`` overflows."""
    data = b'{"f": 1' + b"0" * 400 + b'}\n{"f": 2}\n{"f": Infinity}\n'
    pieces = list(arrow_formats.text_pieces(data, "jsonl", json_fields={"f": "float"}))
    expected = list(file_formats.jsonl_items(data, 0, fields={"f": "float"}))
    assert pieces_as_text(pieces) == pieces_as_text(expected)
    assert expected[0].problem == ("field 'f' is a number too large for a float, not a float")


def test_a_json_field_keeps_any_value_through_the_per_line_parser() -> None:
    data = b'{"k": "a", "v": [1, {"x": 2}]}\n{"k": "b"}\n'
    pieces = list(arrow_formats.text_pieces(data, "jsonl", json_fields={"v": "json", "k": "str"}))
    assert [p.record for p in pieces] == [{"v": [1, {"x": 2}], "k": "a"}, {"v": None, "k": "b"}]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "name at least one field"),
        ({"n": "integer"}, "'n' has type 'integer'; use one of bool, float, int, json, str"),
        ({"": "int"}, "a field name must be a non-empty string"),
    ],
)
def test_declared_fields_are_checked_when_the_source_is_made(fields, message) -> None:
    with pytest.raises(ValueError, match=message):
        FileSource("/nowhere", json_fields=fields)
