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
}


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


def jsonl_items(data: bytes, skip: int, *, first_line: int = 1) -> Iterator[Item]:
    """The records of JSON lines after the first ``skip``; ``data`` starts at ``first_line``."""
    index = 0
    for number, raw in enumerate(data.split(b"\n"), start=first_line):
        if not raw.strip():
            continue
        index += 1
        if index <= skip:
            continue
        yield _parse_json_line(number, raw)


def _parse_json_line(number: int, raw: bytes) -> Item:
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
    return Item(number, value)


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
