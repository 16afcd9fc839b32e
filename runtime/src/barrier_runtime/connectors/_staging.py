"""Where a broker sink keeps pre-committed messages until their checkpoint completes.

A broker sink's writer turns each record into an *entry* (a small JSON list,
e.g. ``[subject, payload]``) and buffers entries between checkpoints. At
``pre_commit`` the entries become a :class:`SinkTxn`:

* **inline** (``records``): up to ``inline_limit`` entries travel inside the
  transaction, i.e. inside the checkpoint's ``_metadata``; or
* **staged** (``parts``): with a ``staging_url`` (any object store URL), the
  writer rolls entries into parts under ``_staging/{step}/`` as it goes (memory
  stays bounded) and the transaction lists the part keys.

A part whose entries are all lists of strings (or ``None``) of one length —
what the Kafka and NATS sinks write — is an Arrow IPC stream of string columns
(``.arrow``): built and read column by column, not one JSON value per message
(the JSON-lines encoding escaped every payload, a JSON text itself, once more,
and parsed it back at commit: a sixth of a Kafka sink subtask's time on Nexmark
q1). Any other part is JSON lines (``.jsonl``); both are read, so parts staged
by an earlier version still commit. Neither format can carry code.

Without a ``staging_url``, buffering more than ``inline_limit`` entries
between two checkpoints raises :class:`~errors.TransactionTooLargeError`.

For staged transactions the sink records the highest committed checkpoint
per ``(step, subtask)`` in ``_staging/{step}/committed-{subtask}`` before it
deletes the parts, so a re-commit whose parts are gone can tell "published
already" (a no-op) from "lost" (an error that names it). Because a completed
checkpoint's transactions are always committed before a later one's, "a
later or equal checkpoint was committed" implies "this one was".

Every transaction has a random ``nonce`` fixed at pre-commit, so message
ids derived from it (:func:`message_id`) are stable across re-commits but
never collide with another job or attempt writing to the same destination.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any, TypedDict

import pyarrow as pa

from barrier_runtime.connectors import errors
from barrier_runtime.storage import errors as storage_errors
from barrier_runtime.storage import object_store

Entry = list[Any]
DEFAULT_INLINE_LIMIT = 10_000


class SinkTxn(TypedDict, total=False):
    """A pre-committed batch of entries; exactly one of ``records`` / ``parts`` is present."""

    step: str
    subtask: int
    checkpoint: int
    nonce: str
    count: int
    records: list[Entry]
    parts: list[str]


def message_id(txn: SinkTxn, index: int) -> str:
    """The deterministic id of entry ``index`` of ``txn`` (``{step}-{chk}-{subtask}-{i}-{nonce}``).

    >>> message_id(SinkTxn(step="out", checkpoint=7, subtask=2, nonce="ab12"), 5)
    'out-7-2-5-ab12'
    """
    return f"{txn['step']}-{txn['checkpoint']}-{txn['subtask']}-{index}-{txn['nonce']}"


class Staging:
    """The optional object-store staging area of one sink (picklable; opens the store lazily)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._store: object_store.ObjectStore | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.url = state["url"]
        self._store = None
        self._lock = threading.Lock()

    @property
    def store(self) -> object_store.ObjectStore:
        with self._lock:
            if self._store is None:
                self._store = object_store.open_object_store(self.url)
            return self._store

    def stage(self, step: str, subtask: int, entries: list[Entry]) -> str:
        body, suffix = encode_part(entries)
        key = f"_staging/{step}/{subtask:04d}-{uuid.uuid4().hex}{suffix}"
        self.store.put(key, body)
        return key

    def entries(self, txn: SinkTxn) -> Iterator[Entry] | None:
        """The staged entries, read part by part, or ``None`` if any part is gone."""
        parts = txn.get("parts", [])
        if any(self.store.stat(key) is None for key in parts):
            return None
        return (entry for key in parts for entry in decode_part(key, self.store.get(key)))

    def committed_up_to(self, step: str, subtask: int) -> int:
        try:
            return int(self.store.get(_marker(step, subtask)))
        except storage_errors.ObjectNotFoundError:
            return -1

    def finish(self, txn: SinkTxn) -> None:
        """Record ``txn`` as published, then drop its parts."""
        step, subtask, checkpoint = txn["step"], txn["subtask"], txn["checkpoint"]
        if self.committed_up_to(step, subtask) < checkpoint:
            self.store.put(_marker(step, subtask), str(checkpoint).encode())
        self.store.delete_many(txn.get("parts", []))

    def recover(self, step: str) -> None:
        """Delete every staged part of ``step`` (the commit markers stay)."""
        parts = [k for k in self.store.list(f"_staging/{step}/") if k.endswith(PART_SUFFIXES)]
        self.store.delete_many(parts)

    def lost(self, txn: SinkTxn, sink: str) -> errors.ConnectorError:
        return errors.ConnectorError(
            f"cannot publish transaction {txn['step']}/{txn['subtask']} of checkpoint "
            f"{txn['checkpoint']} to {sink}: its staged data under {self.store.describe()} "
            "is gone and it was never recorded as published (was the staging area cleaned "
            "by hand?)"
        )


PART_SUFFIXES = (".arrow", ".jsonl")


def encode_part(entries: list[Entry]) -> tuple[bytes, str]:
    """A part's bytes and key suffix: Arrow IPC string columns when every entry is a list
    of strings or ``None`` of one length, else JSON lines.

    >>> body, suffix = encode_part([["k", '{"n":1}'], [None, '{"n":2}']])
    >>> suffix, list(decode_part("p" + suffix, body))
    ('.arrow', [['k', '{"n":1}'], [None, '{"n":2}']])
    >>> body, suffix = encode_part([["s", 1]])
    >>> suffix, list(decode_part("p" + suffix, body))
    ('.jsonl', [['s', 1]])
    """
    width = len(entries[0]) if entries else 0
    if width and all(
        len(e) == width and all(v is None or type(v) is str for v in e) for e in entries
    ):
        columns = [pa.array([e[i] for e in entries], pa.string()) for i in range(width)]
        batch = pa.RecordBatch.from_arrays(columns, names=[f"c{i}" for i in range(width)])
        out = pa.BufferOutputStream()
        with pa.ipc.new_stream(out, batch.schema) as writer:
            writer.write_batch(batch)
        return out.getvalue().to_pybytes(), ".arrow"
    body = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries)
    return body.encode(), ".jsonl"


def decode_part(key: str, body: bytes) -> Iterator[Entry]:
    """The entries of a part as :func:`encode_part` wrote it (by its key's suffix)."""
    if key.endswith(".arrow"):
        for batch in pa.ipc.open_stream(body):
            columns = [c.to_pylist() for c in batch.columns]
            yield from (list(row) for row in zip(*columns, strict=True))
        return
    yield from (json.loads(line) for line in body.decode().splitlines() if line)


def _marker(step: str, subtask: int) -> str:
    return f"_staging/{step}/committed-{subtask:04d}"


class TxnBuffer:
    """The writer side: buffers entries and cuts a :class:`SinkTxn` at each pre-commit."""

    def __init__(
        self,
        *,
        step: str,
        subtask: int,
        staging: Staging | None,
        inline_limit: int,
        describe: str,
    ) -> None:
        self._step = step
        self._subtask = subtask
        self._staging = staging
        self._limit = inline_limit
        self._describe = describe
        self._entries: list[Entry] = []
        self._parts: list[str] = []
        self._staged_count = 0

    def add(self, entries: list[Entry]) -> None:
        self._entries.extend(entries)
        if len(self._entries) < self._limit:
            return
        if self._staging is None:
            raise errors.TransactionTooLargeError(
                f"{self._describe} (step {self._step!r}, subtask {self._subtask}) buffered "
                f"{len(self._entries)} messages since the last checkpoint, more than "
                f"inline_limit={self._limit} may travel in checkpoint metadata: give the sink "
                "a staging_url (an object store URL), checkpoint more often or raise inline_limit"
            )
        self._roll()

    def _roll(self) -> None:
        if self._entries and self._staging is not None:
            self._parts.append(self._staging.stage(self._step, self._subtask, self._entries))
            self._staged_count += len(self._entries)
            self._entries = []

    def cut(self, checkpoint_id: int) -> SinkTxn | None:
        if not self._entries and not self._parts:
            return None
        txn = SinkTxn(
            step=self._step,
            subtask=self._subtask,
            checkpoint=checkpoint_id,
            nonce=uuid.uuid4().hex[:12],
        )
        if self._parts:
            self._roll()
            txn["parts"], txn["count"] = self._parts, self._staged_count
        else:
            txn["records"], txn["count"] = self._entries, len(self._entries)
        self._entries, self._parts, self._staged_count = [], [], 0
        return txn
