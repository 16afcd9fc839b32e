"""A bounded, replayable source over JSON-lines, CSV and Parquet files in a directory or S3 prefix.

Partitions are files: every object under the URL (a directory, ``file://`` or
``s3://bucket/prefix?endpoint=…`` URL, see
:func:`~barrier_runtime.storage.object_store.open_object_store`) whose
relative name matches ``pattern`` (an ``fnmatch`` glob; ``*`` also matches
``/``), in sorted name order. Names with a segment starting with ``_`` or
``.`` are hidden (Hadoop/Spark convention; this skips a
:class:`~barrier_runtime.connectors.files.FileSink`'s ``_staging/``). The
file list is taken when the job starts (and again at every restore: a new
file starts from its beginning, a vanished one is forgotten).

Positions, always *after* the last record returned:

* JSON lines and CSV: the number of data records consumed (blank lines and
  the CSV header do not count; a skipped malformed record does);
* Parquet: ``{"row_group": g, "offset": o}``, the next row to read.

Records come as Arrow ``RecordBatch``\\ es, read by pyarrow's Parquet, CSV
and JSON readers (:mod:`~barrier_runtime.connectors.arrow_formats`); a
per-record step sees them as the same dicts the per-line parsers of
:mod:`~barrier_runtime.connectors.file_formats` give (a JSON-lines or CSV
block Arrow cannot read exactly — a malformed line, a null or missing key, a
whole number in a float column — is read by those parsers and comes as rows).
Only the order of a JSON record's keys may differ (the block's column order).

``json_fields`` declares the fields of JSON-lines records, like a reader
schema in Spark: ``{"key": "int", "kind": "str"}`` reads only those two
fields (in that order; the others are skipped unparsed, which is faster),
a missing or ``null`` field is ``None``, and a value of another type is a
malformed record (``"int"``: a JSON integer, ``"float"``: any JSON number,
``"str"``, ``"bool"``, ``"json"``: any value as ``json.loads`` gives it).

A malformed record raises :class:`~errors.MalformedRecordError` naming the
file and line (``on_error="fail"``, the default); with ``on_error="skip"``
it is counted (metrics, the live view, the summary) and logged, and with
``on_error="dead-letter"`` it goes to the dataflow's dead-letter sink with its
position and problem; either way reading goes on. Each file is read whole
into memory when its partition first reads, then parsed a block of about
``batch_size`` lines (1 to 16 MiB, :func:`~arrow_formats.block_bytes_for`) or
a Parquet batch at a time; at most ``max_open_files`` files per worker (per
slice of the job: a Spark worker process, or one slice of the in-process
executor, see :meth:`FileSource.for_worker`) are held at once; the others wait their turn,
returning ``[]``. With event time a waiting file holds back no watermark (see
:attr:`~sources.SourcePartition.waiting`): name files in event-time order, so
that a file starting later holds later events.

>>> import pathlib, tempfile
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> _ = (root / "a.jsonl").write_text('{"n": 1}\\n{"n": 2}\\n{"n": 3}\\n')
>>> src = FileSource(str(root), batch_size=2)
>>> src.partitions()
['a.jsonl']
>>> part = src.open("a.jsonl", None)
>>> part.next_batch().to_pylist(), part.snapshot()
([{'n': 1}, {'n': 2}], 2)
>>> src.open("a.jsonl", 2).next_batch().to_pylist()
[{'n': 3}]
"""

from __future__ import annotations

import copy
import fnmatch
import logging
import threading
import zlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import pyarrow as pa

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import sources
from barrier_runtime.connectors import arrow_formats, errors, file_formats
from barrier_runtime.storage import object_store

log = logging.getLogger(__name__)

OnError = Literal["fail", "skip", "dead-letter"]


class FileSource(sources.Source):
    """Files under ``url`` as partitions; see the module docstring for positions and errors."""

    def __init__(
        self,
        url: str,
        *,
        format: file_formats.FileFormat | None = None,
        pattern: str | None = None,
        batch_size: int = 1000,
        on_error: OnError = "fail",
        csv_delimiter: str = ",",
        csv_columns: Sequence[str] | None = None,
        column_types: Mapping[str, file_formats.ColumnType] | None = None,
        json_fields: Mapping[str, file_formats.ColumnType] | None = None,
        max_open_files: int = 4,
    ) -> None:
        if batch_size < 1 or max_open_files < 1:
            raise ValueError("batch_size and max_open_files must be positive")
        file_formats.check_column_types("column_types", column_types or {})
        if json_fields is not None:
            if not json_fields:
                raise ValueError("json_fields: name at least one field, or leave it out")
            file_formats.check_column_types("json_fields", json_fields)
        if on_error not in ("fail", "skip", "dead-letter"):
            raise ValueError(f"on_error must be 'fail', 'skip' or 'dead-letter', not {on_error!r}")
        self.url = url
        self.format = format
        self.pattern = pattern
        self.batch_size = batch_size
        self.on_error: OnError = on_error
        self.csv_options = file_formats.CsvOptions(
            delimiter=csv_delimiter,
            columns=None if csv_columns is None else tuple(csv_columns),
            column_types=dict(column_types or {}),
        )
        self.json_fields = None if json_fields is None else dict(json_fields)
        self.max_open_files = max_open_files
        self._store: object_store.ObjectStore | None = None
        self._slots: threading.BoundedSemaphore | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("_store", "_slots", "_lock")}
        return {**state, "_store": None, "_slots": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def for_worker(self) -> FileSource:
        """A copy with its own ``max_open_files`` slots (and store client), as a Spark
        worker process that loaded the pipeline has."""
        return copy.copy(self)  # through __getstate__: no slots, no store, a new lock

    @property
    def store(self) -> object_store.ObjectStore:
        with self._lock:
            if self._store is None:
                self._store = object_store.open_object_store(self.url)
            return self._store

    @property
    def slots(self) -> threading.BoundedSemaphore:
        with self._lock:
            if self._slots is None:
                self._slots = threading.BoundedSemaphore(self.max_open_files)
            return self._slots

    def partitions(self) -> Sequence[str]:
        return [key for key in self.store.list("") if self._wanted(key)]

    def _wanted(self, key: str) -> bool:
        if any(part.startswith(("_", ".")) for part in key.split("/")):
            return False
        return self.pattern is None or fnmatch.fnmatchcase(key, self.pattern)

    def format_of(self, key: str) -> file_formats.FileFormat:
        fmt = self.format or file_formats.infer_format(key)
        if fmt is None:
            raise errors.ConnectorError(
                f"cannot tell the format of {key!r} in {self.store.describe()}: name files "
                "*.jsonl, *.csv or *.parquet (optionally .gz), or pass format=, or narrow pattern="
            )
        return fmt

    def open(self, partition: str, resume_from: sources.Position | None) -> sources.SourcePartition:
        fmt = self.format_of(partition)
        if fmt == "parquet":
            return _ParquetPartition(self, partition, resume_from)
        return _TextPartition(self, partition, fmt, int(resume_from or 0))


class FilePartition(sources.SourcePartition):
    """Common life cycle: wait for a slot, load the file once, release it at the end."""

    def __init__(self, source: FileSource, key: str) -> None:
        self.source = source
        self.key = key
        self.skipped = 0
        self._rejected: list[sources.Rejected] = []
        self._holding = False
        self._blocked = False
        self._started = False
        self._finished = False

    @property
    def waiting(self) -> bool:
        """Not started: it tried, and every slot of ``max_open_files`` was taken.

        A partition that has not tried yet is not waiting: it may start at once,
        so it holds the watermark back until it has read.
        """
        return self._blocked and not self._started

    def where(self) -> str:
        return self.source.store.describe_key(self.key)

    def _load(self) -> bytes | None:
        """The file's bytes once a slot is free, else ``None`` (try again later)."""
        if not self._holding:
            if not self.source.slots.acquire(blocking=False):
                self._blocked = True
                return None
            self._holding = True
            self._started = True
        data = self.source.store.get(self.key)
        try:
            return file_formats.maybe_decompress(self.key, data)
        except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile and friends
            raise errors.MalformedRecordError(
                f"{self.where()} is not valid gzip ({exc}): fix or remove the file"
            ) from exc

    def _release(self) -> None:
        if self._holding:
            self._holding = False
            self.source.slots.release()

    def _finish(self) -> None:
        self._finished = True
        self._release()
        if self.skipped:
            what = "skipped" if self.source.on_error == "skip" else "sent to dead letters"
            log.warning("%s %d malformed record(s) in %s", what, self.skipped, self.where())

    def _malformed(self, detail: str, raw: str | None = None) -> None:
        message = f"malformed record in {self.where()} {detail}"
        if self.source.on_error == "fail":
            raise errors.MalformedRecordError(
                f"{message}; fix the input or read with on_error='skip' or 'dead-letter'"
            )
        self.skipped += 1
        if self.source.on_error == "skip":
            log.warning("skipping %s", message)
        where, _, problem = detail.partition(": ")
        self._rejected.append(sources.Rejected(f"{self.where()} {where}", problem or detail, raw))

    def rejected(self) -> Sequence[sources.Rejected]:
        taken, self._rejected = self._rejected, []
        return taken

    def close(self) -> None:
        self._release()


class _TextPartition(FilePartition):
    def __init__(
        self, source: FileSource, key: str, fmt: Literal["jsonl", "csv"], position: int
    ) -> None:
        super().__init__(source, key)
        self._fmt: Literal["jsonl", "csv"] = fmt
        self._position = position
        self._pieces: Iterator[arrow_formats.Piece] | None = None
        self._held: pa.RecordBatch | None = None

    def next_batch(self) -> Sequence[batch_mod.Record] | pa.RecordBatch | None:
        if self._held is not None:
            return self._hand_out(self._held)
        if self._finished:
            return None
        if self._pieces is None:
            data = self._load()
            if data is None:
                return []
            self._pieces = arrow_formats.text_pieces(
                data,
                self._fmt,
                skip=self._position,
                csv_options=self.source.csv_options,
                json_fields=self.source.json_fields,
                batch_size=self.source.batch_size,
                block_bytes=arrow_formats.block_bytes_for(data, self.source.batch_size),
            )
        rows: list[batch_mod.Record] = []
        for piece in self._pieces:
            if isinstance(piece, pa.RecordBatch):
                if not rows:
                    return self._hand_out(piece)
                self._held = piece  # the rows parsed before it go first
                return rows
            self._position += 1
            if piece.record is None:
                self._malformed(f"line {piece.line}: {piece.problem}", piece.raw)
            else:
                rows.append(piece.record)
            if len(rows) >= self.source.batch_size:
                return rows
        self._pieces = iter(())
        self._finish()
        return rows or None

    def _hand_out(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        self._held = None
        self._position += batch.num_rows
        return batch

    def snapshot(self) -> sources.Position:
        return self._position


class _ParquetPartition(FilePartition):
    def __init__(self, source: FileSource, key: str, resume_from: sources.Position | None) -> None:
        super().__init__(source, key)
        try:
            self._position = file_formats.ParquetPosition.from_storage(resume_from)
        except ValueError as exc:
            raise errors.ConnectorError(f"cannot resume {self.where()}: {exc}") from exc
        self._batches: (
            Iterator[tuple[file_formats.ParquetPosition, pa.RecordBatch | None]] | None
        ) = None

    def next_batch(self) -> Sequence[batch_mod.Record] | pa.RecordBatch | None:
        if self._finished:
            return None
        try:
            if self._batches is None:
                data = self._load()
                if data is None:
                    return []
                self._batches = arrow_formats.parquet_batches(
                    data, self._position, self.source.batch_size
                )
            for position, batch in self._batches:
                self._position = position
                if batch is not None:
                    return batch
        except errors.MalformedRecordError:
            raise
        except Exception as exc:  # pyarrow raises several unrelated types for a bad file
            self._malformed(
                f"at row group {self._position.row_group}: not readable as Parquet "
                f"({type(exc).__name__}: {exc})"
            )
        self._finish()
        return None

    def snapshot(self) -> sources.Position:
        return self._position.for_storage()
