"""Transactional JSON-lines files on a local directory or an S3 prefix.

:class:`FileSink` is exactly-once: records are staged under
``{prefix}/_staging/`` (rolled into parts so memory stays bounded) and a
checkpoint's transaction lists ``(staged, final)`` pairs. Committing copies
each staged part to its final name ``part-{checkpoint}-{subtask}-{n}.jsonl``
with a create-only put and removes the staged object. Re-committing is a
no-op once the final object exists; a transaction whose staged and final
objects are both gone is reported, never silently skipped.

Final names sort by checkpoint id, so reading them in name order yields each
key's records in order (a key lives in one subtask during one checkpoint).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import sinks
from barrier_runtime.core import json_text
from barrier_runtime.storage import errors, object_store

_ROLL_RECORDS = 50_000


_ENCODER = json.JSONEncoder(separators=(",", ":"), default=str)
"""What ``json.dumps(record, separators=(",", ":"), default=str)`` uses, made once."""


def json_lines(records: Sequence[batch_mod.Record]) -> str:
    """Each record as one line of compact JSON (``default=str``), each line ending in a newline.

    The whole list is encoded in one call when its text splits unambiguously:
    records that are all plain dicts meet only at ``},{``, so when that occurs
    exactly ``len(records) - 1`` times every occurrence is a boundary. A
    string or a nested list of dicts holding ``},{`` makes the count higher,
    and the records are encoded one by one.

    >>> json_lines([{"a": 1}, {"b": "},{"}, {}])
    '{"a":1}\\n{"b":"},{"}\\n{}\\n'
    """
    if records and set(map(type, records)) == {dict}:
        text = _ENCODER.encode(list(records))
        if text.count("},{") == len(records) - 1:
            return text[1:-1].replace("},{", "}\n{") + "\n"
    return "".join(_ENCODER.encode(r) + "\n" for r in records)


class TransactionLostError(RuntimeError):
    """A pre-committed transaction's data is gone before it was published."""


class FileSink(sinks.Sink):
    """Exactly-once JSON-lines output under ``url`` (a directory, ``file://`` or ``s3://`` URL)."""

    def __init__(self, url: str, *, roll_records: int = _ROLL_RECORDS) -> None:
        self.url = url
        self.roll_records = roll_records
        self._store: object_store.ObjectStore | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "roll_records": self.roll_records, "_store": None}

    @property
    def store(self) -> object_store.ObjectStore:
        if self._store is None:
            self._store = object_store.open_object_store(self.url)
        return self._store

    def writer(self, step_id: str, subtask: int, parallelism: int) -> sinks.SinkWriter:
        return _FileWriter(self, step_id, subtask)

    def commit(self, transaction: sinks.Transaction) -> None:
        store = self.store
        for staged, final in transaction["parts"]:
            if store.stat(final) is not None:
                store.delete(staged)
                continue
            try:
                data = store.get(staged)
            except errors.ObjectNotFoundError:
                if store.stat(final) is not None:
                    continue  # a concurrent commit won
                raise TransactionLostError(
                    f"cannot publish {final} in {store.describe()}: its staged data {staged} "
                    "is gone (was the staging area cleaned by hand?)"
                ) from None
            store.put_if_absent(final, data)
            store.delete(staged)

    def recover(self, step_id: str) -> None:
        store = self.store
        store.delete_many(list(store.list(f"_staging/{step_id}/")))

    def committed_files(self) -> list[str]:
        return [k for k in self.store.list("") if k.rsplit("/", 1)[-1].startswith("part-")]

    def read_committed(self) -> Iterator[batch_mod.Record]:
        """Every published record, in file-name order."""
        for key in self.committed_files():
            for line in self.store.get(key).decode().splitlines():
                if line:
                    yield json.loads(line)


class _FileWriter(sinks.SinkWriter):
    """Buffers a part's text: Arrow batches encoded by Arrow where it writes what ``json`` would
    (:mod:`~barrier_runtime.core.json_text`), rows encoded by :func:`json_lines`, in order."""

    def __init__(self, sink: FileSink, step_id: str, subtask: int) -> None:
        self._sink = sink
        self._step = step_id
        self._subtask = subtask
        self._text: list[bytes] = []
        self._rows: list[batch_mod.Record] = []
        self._pending = 0
        self._staged: list[str] = []

    def write(self, records: Sequence[batch_mod.Record]) -> None:
        self._rows.extend(records)
        self._added(len(records))

    def write_batch(self, batch: pa.RecordBatch) -> None:
        text = json_text.json_lines(batch)
        if text is None:
            self.write(batch.to_pylist())
            return
        self._encode_rows()
        self._text.append(text)
        self._added(batch.num_rows)

    def _added(self, records: int) -> None:
        self._pending += records
        if self._pending >= self._sink.roll_records:
            self._stage()

    def _encode_rows(self) -> None:
        if self._rows:
            self._text.append(json_lines(self._rows).encode())
            self._rows = []

    def _stage(self) -> None:
        self._encode_rows()
        if not self._text:
            return
        body = b"".join(self._text)
        key = f"_staging/{self._step}/{self._subtask}-{uuid.uuid4().hex}.jsonl"
        self._sink.store.put(key, body)
        self._staged.append(key)
        self._text = []
        self._pending = 0

    def pre_commit(self, checkpoint_id: int) -> sinks.Transaction | None:
        self._stage()
        if not self._staged:
            return None
        parts = [
            [staged, f"part-{checkpoint_id:010d}-{self._step}-{self._subtask:04d}-{i:03d}.jsonl"]
            for i, staged in enumerate(self._staged)
        ]
        self._staged = []
        return {"parts": parts}
