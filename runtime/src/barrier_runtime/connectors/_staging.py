"""Where a broker sink keeps pre-committed messages until their checkpoint completes.

A broker sink's writer turns each record into an *entry* (a small JSON list,
e.g. ``[subject, payload]``) and buffers entries between checkpoints. At
``pre_commit`` the entries become a :class:`SinkTxn`:

* **inline** (``records``): up to ``inline_limit`` entries travel inside the
  transaction, i.e. inside the checkpoint's ``_metadata``; or
* **staged** (``parts``): with a ``staging_url`` (any object store URL), the
  writer rolls entries into JSON-lines parts under ``_staging/{step}/`` as it
  goes (memory stays bounded) and the transaction lists the part keys.

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
        body = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries)
        key = f"_staging/{step}/{subtask:04d}-{uuid.uuid4().hex}.jsonl"
        self.store.put(key, body.encode())
        return key

    def entries(self, txn: SinkTxn) -> Iterator[Entry] | None:
        """The staged entries, read part by part, or ``None`` if any part is gone."""
        parts = txn.get("parts", [])
        if any(self.store.stat(key) is None for key in parts):
            return None
        return (
            json.loads(line)
            for key in parts
            for line in self.store.get(key).decode().splitlines()
            if line
        )

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
        parts = [k for k in self.store.list(f"_staging/{step}/") if k.endswith(".jsonl")]
        self.store.delete_many(parts)

    def lost(self, txn: SinkTxn, sink: str) -> errors.ConnectorError:
        return errors.ConnectorError(
            f"cannot publish transaction {txn['step']}/{txn['subtask']} of checkpoint "
            f"{txn['checkpoint']} to {sink}: its staged data under {self.store.describe()} "
            "is gone and it was never recorded as published (was the staging area cleaned "
            "by hand?)"
        )


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
