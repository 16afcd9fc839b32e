"""``FileSink`` writes each record as the line ``json.dumps`` gives it, whatever the records hold.

``json_lines`` encodes a whole part in one call and splits it at ``},{``;
strings, nested dicts and lists of dicts that contain that text must still
come out as one line per record, each equal to encoding the record alone.
"""

import datetime
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from barrier_runtime.connectors import files

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
