"""Sources and sinks for tests, with crash injection as data (bytewax style).

>>> src = TestingSource([{"n": 1}, TestingSource.ABORT(), {"n": 2}])
>>> part = src.open("items", None)
>>> part.next_batch()
[{'n': 1}]
>>> part.next_batch()
Traceback (most recent call last):
...
barrier_runtime.testing.connectors.InjectedAbort: ABORT sentinel reached at item 1
>>> src.open("items", 1).next_batch()  # after a restore, the sentinel has fired already
[{'n': 2}]
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from typing import Any

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import sinks, sources


class InjectedAbort(RuntimeError):
    """Raised by a :class:`TestingSource` when it reaches an ``ABORT`` item."""


class _Abort:
    """Crash the first time it is read; pass through on replay."""

    def __init__(self) -> None:
        self._fired = threading.Event()

    def fire(self, index: int) -> None:
        if not self._fired.is_set():
            self._fired.set()
            raise InjectedAbort(f"ABORT sentinel reached at item {index}")


class TestingSource(sources.Source):
    """A single-partition source over a list; items may include ``TestingSource.ABORT()``."""

    __test__ = False  # not a pytest class
    ABORT = _Abort

    def __init__(self, items: Sequence[Any], *, batch_size: int = 1, name: str = "items") -> None:
        self.items = list(items)
        self.batch_size = batch_size
        self.name = name

    def partitions(self) -> Sequence[str]:
        return [self.name]

    def open(self, partition: str, resume_from: sources.Position | None) -> sources.SourcePartition:
        return _ListPartition(self.items, int(resume_from or 0), self.batch_size)


class _ListPartition(sources.SourcePartition):
    def __init__(self, items: list[Any], position: int, batch_size: int) -> None:
        self._items = items
        self._next = position
        self._batch = batch_size

    def next_batch(self) -> Sequence[batch_mod.Record] | None:
        if self._next >= len(self._items):
            return None
        out: list[batch_mod.Record] = []
        while self._next < len(self._items) and len(out) < self._batch:
            item = self._items[self._next]
            if isinstance(item, _Abort):
                if out:
                    break  # deliver what we have; crash on the next call
                item.fire(self._next)
                self._next += 1
                continue
            out.append(item)
            self._next += 1
        return out

    def snapshot(self) -> sources.Position:
        return self._next


class TestingSink(sinks.Sink):
    """An in-memory two-phase-commit sink; ``output`` holds committed records in commit order."""

    __test__ = False  # not a pytest class

    def __init__(self) -> None:
        self.output: list[batch_mod.Record] = []
        self._staged: dict[str, list[batch_mod.Record]] = {}
        self._committed: set[str] = set()
        self._lock = threading.Lock()
        self._ids = itertools.count()

    def writer(self, step_id: str, subtask: int, parallelism: int) -> sinks.SinkWriter:
        return _MemoryWriter(self, subtask)

    def stage(self, rows: list[batch_mod.Record]) -> str:
        with self._lock:
            txn = f"t{next(self._ids)}"
            self._staged[txn] = rows
            return txn

    def commit(self, transaction: sinks.Transaction) -> None:
        with self._lock:
            if transaction in self._committed:
                return
            rows = self._staged.pop(transaction, None)
            if rows is None:
                raise RuntimeError(f"transaction {transaction} was never staged")
            self.output.extend(rows)
            self._committed.add(transaction)


class _MemoryWriter(sinks.SinkWriter):
    def __init__(self, sink: TestingSink, subtask: int) -> None:
        self._sink = sink
        self._buffer: list[batch_mod.Record] = []

    def write(self, records: Sequence[batch_mod.Record]) -> None:
        self._buffer.extend(records)

    def pre_commit(self, checkpoint_id: int) -> sinks.Transaction | None:
        if not self._buffer:
            return None
        rows, self._buffer = self._buffer, []
        return self._sink.stage(rows)
