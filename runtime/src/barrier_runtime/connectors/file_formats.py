"""Record decoders for :class:`~barrier_runtime.connectors.file_source.FileSource`.

Pure functions over a file's bytes (no I/O): JSON lines and CSV yield
:class:`Item`\\ s (one per data record, well-formed or not, with its line
number) starting after the first ``skip`` records, so a resume position is
simply "records consumed"; Parquet positions are a row group and an offset
(:class:`ParquetPosition`). Text formats may be gzip-compressed (``.gz``
suffix). These per-line parsers define what a record is;
:mod:`~barrier_runtime.connectors.arrow_formats` reads the same files as Arrow
batches and falls back to them for a block Arrow cannot read exactly.

>>> [(i.line, i.record, i.problem) for i in iter_items(b'{"a": 1}\\n\\n[2]\\n', "jsonl")]
[(1, {'a': 1}, None), (3, None, 'a JSON array is not a record (expected an object)')]
>>> [i.record for i in iter_items(b"k,n\\nx,1\\ny,2\\n", "csv", skip=1, column_types={"n": "int"})]
[{'k': 'y', 'n': 2}]

JSON lines read with declared ``fields`` (:func:`jsonl_items`) keep only
those fields, in that order, each of its declared type; a field that is
missing or ``null`` is ``None``, and a value of another type makes the record
malformed:

>>> lines = b'{"n": 1, "k": "x", "more": [1]}\\n{"k": "y"}\\n{"n": "2"}\\n'
>>> for item in jsonl_items(lines, 0, fields={"k": "str", "n": "int"}):
...     print(item.record, item.problem)
{'k': 'x', 'n': 1} None
{'k': 'y', 'n': None} None
None field 'n' is a JSON string, not an int
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from barrier_runtime.api import batch as batch_mod

FileFormat = Literal["jsonl", "csv", "parquet"]
ColumnType = Literal["str", "int", "float", "bool", "json"]

_SUFFIXES: dict[str, FileFormat] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_TRUE = frozenset({"true", "t", "yes", "y", "1"})
_FALSE = frozenset({"false", "f", "no", "n", "0"})
_JSON_KINDS = {
    list: "a JSON array",
    str: "a JSON string",
    int: "a JSON number",
    float: "a JSON number",
    bool: "a JSON boolean",
    type(None): "JSON null",
    dict: "a JSON object",
}
COLUMN_TYPES: frozenset[ColumnType] = frozenset(("str", "int", "float", "bool", "json"))


@dataclass(frozen=True, slots=True)
class Item:
    """One data record of a text file: parsed, or the reason it could not be."""

    line: int
    record: batch_mod.Record | None
    problem: str | None = None
    raw: str | None = None
    """The text of a malformed record (for dead letters)."""


@dataclass(frozen=True, slots=True)
class CsvOptions:
    """How CSV files are read: the first row names the columns unless ``columns`` are given."""

    delimiter: str = ","
    quotechar: str = '"'
    columns: tuple[str, ...] | None = None
    column_types: Mapping[str, ColumnType] = field(default_factory=dict)


def infer_format(name: str) -> FileFormat | None:
    """The format a file name's suffix implies (``.gz`` is looked through), else ``None``.

    >>> infer_format("2024/01/events.jsonl.gz"), infer_format("a.parquet"), infer_format("x.txt")
    ('jsonl', 'parquet', None)
    """
    lower = name.lower().removesuffix(".gz")
    dot = lower.rfind(".")
    return None if dot < 0 else _SUFFIXES.get(lower[dot:])


def maybe_decompress(name: str, data: bytes) -> bytes:
    """Gunzip ``data`` if the name ends in ``.gz``."""
    return gzip.decompress(data) if name.lower().endswith(".gz") else data


def iter_items(
    data: bytes,
    fmt: Literal["jsonl", "csv"],
    *,
    skip: int = 0,
    csv_options: CsvOptions | None = None,
    column_types: Mapping[str, ColumnType] | None = None,
) -> Iterator[Item]:
    """Every data record of a text file after the first ``skip`` ones."""
    if fmt == "jsonl":
        yield from jsonl_items(data, skip)
        return
    options = csv_options or CsvOptions()
    if column_types is not None:
        options = CsvOptions(options.delimiter, options.quotechar, options.columns, column_types)
    yield from _csv_items(data, skip, options)


def check_column_types(what: str, types: Mapping[str, ColumnType]) -> None:
    """Raise ``ValueError`` naming the first entry of ``types`` that is not a name and a type."""
    for name, kind in types.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"{what}: a field name must be a non-empty string, not {name!r}")
        if kind not in COLUMN_TYPES:
            raise ValueError(
                f"{what}: {name!r} has type {kind!r}; use one of {', '.join(sorted(COLUMN_TYPES))}"
            )


def jsonl_items(
    data: bytes,
    skip: int,
    *,
    first_line: int = 1,
    fields: Mapping[str, ColumnType] | None = None,
) -> Iterator[Item]:
    """The records of JSON lines after the first ``skip``; ``data`` starts at ``first_line``.

    With ``fields``, each record holds only those fields, typed (see the module docstring).
    """
    index = 0
    for number, raw in enumerate(data.split(b"\n"), start=first_line):
        if not raw.strip():
            continue
        index += 1
        if index <= skip:
            continue
        yield _parse_json_line(number, raw, fields)


def _parse_json_line(number: int, raw: bytes, fields: Mapping[str, ColumnType] | None) -> Item:
    text = raw.decode("utf-8", errors="replace")
    try:
        value = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return Item(number, None, f"not valid UTF-8 ({exc.reason} at byte {exc.start + 1})", text)
    except json.JSONDecodeError as exc:
        return Item(number, None, f"not valid JSON ({exc.msg} at column {exc.colno})", text)
    if not isinstance(value, dict):
        kind = _JSON_KINDS.get(type(value), "a JSON value")
        return Item(number, None, f"{kind} is not a record (expected an object)", text)
    return Item(number, value) if fields is None else _typed_record(number, value, fields, text)


def _typed_record(
    number: int, value: dict[str, Any], fields: Mapping[str, ColumnType], text: str
) -> Item:
    record: dict[str, Any] = {}
    for name, kind in fields.items():
        field_value = value.get(name)
        if field_value is not None and kind != "json":
            try:
                field_value = _JSON_TYPES[kind](field_value)
            except (TypeError, OverflowError) as exc:
                return Item(number, None, f"field {name!r} is {exc}, not {_A[kind]}", text)
        record[name] = field_value
    return Item(number, record)


def _json_kind(value: Any) -> str:
    return _JSON_KINDS.get(type(value), "a JSON value")


def _json_int(value: Any) -> int:
    if type(value) is not int:
        raise TypeError(_json_kind(value))
    return value


def _json_float(value: Any) -> float:
    if type(value) not in (int, float):
        raise TypeError(_json_kind(value))
    try:
        return float(value)
    except OverflowError as exc:
        raise OverflowError("a number too large for a float") from exc


def _json_str(value: Any) -> str:
    if type(value) is not str:
        raise TypeError(_json_kind(value))
    return str(value)


def _json_bool(value: Any) -> bool:
    if type(value) is not bool:
        raise TypeError(_json_kind(value))
    return bool(value)


_JSON_TYPES: dict[str, Callable[[Any], Any]] = {
    "int": _json_int,
    "float": _json_float,
    "str": _json_str,
    "bool": _json_bool,
}
_A = {"int": "an int", "float": "a float", "str": "a str", "bool": "a bool"}


def _csv_items(data: bytes, skip: int, options: CsvOptions) -> Iterator[Item]:
    text = data.decode("utf-8", errors="surrogateescape").removeprefix("\ufeff")
    reader = csv.reader(
        io.StringIO(text, newline=""),
        delimiter=options.delimiter,
        quotechar=options.quotechar,
        strict=True,
    )
    columns = options.columns
    index = 0
    rows = iter(reader)
    while True:
        line = reader.line_num + 1
        try:
            row = next(rows)
        except StopIteration:
            return
        except csv.Error as exc:
            index += 1
            if index > skip:
                yield Item(line, None, f"not valid CSV ({exc})")
            return  # the csv module cannot continue past a broken quote
        if columns is None:
            columns = tuple(row)
            continue
        if not row or row == [""]:
            continue
        index += 1
        if index > skip:
            yield _csv_record(reader.line_num, row, columns, options.column_types)


def _csv_record(
    line: int, row: list[str], columns: tuple[str, ...], types: Mapping[str, ColumnType]
) -> Item:
    raw = ",".join(row)
    if len(row) != len(columns):
        return Item(line, None, f"has {len(row)} fields, the header names {len(columns)}", raw)
    record: dict[str, Any] = {}
    for name, text in zip(columns, row, strict=True):
        if any("\udc80" <= ch <= "\udcff" for ch in text):
            return Item(line, None, f"column {name!r} is not valid UTF-8", raw)
        kind = types.get(name, "str")
        try:
            record[name] = _convert(text, kind)
        except ValueError:
            return Item(line, None, f"column {name!r}: {text!r} is not a valid {kind}", raw)
    return Item(line, record)


def _convert(text: str, kind: ColumnType) -> Any:
    if kind == "str":
        return text
    if text == "":
        return None
    converter: Callable[[str], Any] = _CONVERTERS[kind]
    return converter(text)


def _to_bool(text: str) -> bool:
    lower = text.strip().lower()
    if lower in _TRUE:
        return True
    if lower in _FALSE:
        return False
    raise ValueError(text)


def _to_json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(text) from exc


_CONVERTERS: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "bool": _to_bool,
    "json": _to_json,
}


@dataclass(frozen=True, slots=True)
class ParquetPosition:
    """The next row to read: row ``offset`` of row group ``row_group``."""

    row_group: int = 0
    offset: int = 0

    def for_storage(self) -> dict[str, int]:
        return {"row_group": self.row_group, "offset": self.offset}

    @classmethod
    def from_storage(cls, value: Any) -> ParquetPosition:
        if value is None:
            return cls()
        if not isinstance(value, Mapping) or not {"row_group", "offset"} <= set(value):
            raise ValueError(f"{value!r} is not a Parquet position (row_group and offset)")
        return cls(int(value["row_group"]), int(value["offset"]))
