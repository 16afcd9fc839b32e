"""A call trace of records going through an operator chain, counted per file and function.

:func:`trace_chain` runs a small job in the in-process executor
(parallelism 1): a source, two chained ``map`` steps and a ``key_by`` (the
source task, ending at the network output), then a keyed ``stateful_map``
and a sink (the task after the keyed edge). While it runs, a profile hook
counts every call into the runtime on each of the two subtask threads:
per ``file:function``, and separately the calls that *enter* the subtask
(a function of ``task/subtask.py`` called from any other file). The
issue-30 note quotes its output; ``tests/unit/barrier_runtime/task`` asserts
on it.

Run it (it also works on a checkout from before the chain owned its outputs)::

    python -m barrier_runtime_testing.call_trace --batches 50 --batch-size 100
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import pathlib
import sys
import tempfile
import threading
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import barrier_runtime
from barrier_runtime.api import Dataflow
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor, TestingSink, TestingSource

_ROOT = str(pathlib.Path(barrier_runtime.__file__).resolve().parent) + "/"
_SUBTASK = "task/subtask.py"
SOURCE_TASK = "events"
"""The source task's id (its head step): source → map → map → key_by → network."""
KEYED_TASK = "count"
"""The keyed task's id: network → stateful_map → sink."""


@dataclass
class ThreadTrace:
    """The calls into the runtime on one subtask thread."""

    calls: collections.Counter[str] = field(default_factory=collections.Counter)
    """Per ``file:function`` (relative to the package), how often it was called."""
    subtask_entries: collections.Counter[str] = field(default_factory=collections.Counter)
    """Per function of ``task/subtask.py``: calls from outside that file."""


@dataclass
class ChainTrace:
    batches: int
    batch_size: int
    threads: dict[str, ThreadTrace]
    """Per task id (:data:`SOURCE_TASK`, :data:`KEYED_TASK`)."""
    output: list[Any]

    def per_batch(self, task: str) -> list[tuple[str, float]]:
        """The calls of ``task``'s thread made at least once per batch, per batch, most first."""
        calls = self.threads[task].calls
        rows = [(name, n / self.batches) for name, n in calls.items() if n >= self.batches]
        return sorted(rows, key=lambda row: (-row[1], row[0]))


def _relative(code: types.CodeType) -> str | None:
    path = code.co_filename
    return path[len(_ROOT) :] if path.startswith(_ROOT) else None


class _Profiler:
    def __init__(self) -> None:
        self.threads: dict[str, ThreadTrace] = {}
        self._lock = threading.Lock()

    def hook(self, frame: types.FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        where = _relative(frame.f_code)
        if where is None:
            return
        task = threading.current_thread().name.split("#", 1)[0]
        if task not in (SOURCE_TASK, KEYED_TASK):
            return
        with self._lock:
            trace = self.threads.setdefault(task, ThreadTrace())
        name = f"{where}:{frame.f_code.co_qualname}"
        trace.calls[name] += 1
        caller = frame.f_back
        if where == _SUBTASK and (caller is None or _relative(caller.f_code) != _SUBTASK):
            trace.subtask_entries[name] += 1


def _add_one(record: dict[str, Any]) -> dict[str, Any]:
    return {"key": record["key"], "value": record["value"] + 1}


def _double(record: dict[str, Any]) -> dict[str, Any]:
    return {"key": record["key"], "value": record["value"] * 2}


def _count(state: int | None, record: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
    n = (state or 0) + 1
    return n, [{"key": record["key"], "count": n}]


def build_flow(records: list[dict[str, Any]], batch_size: int, sink: TestingSink) -> Dataflow:
    flow = Dataflow("call-trace")
    events = flow.source(SOURCE_TASK, TestingSource(records, batch_size=batch_size))
    mapped = events.map("add-one", _add_one).map("double", _double)
    counts = mapped.key_by("by-key", lambda r: r["key"]).stateful_map(KEYED_TASK, _count)
    counts.sink("out", sink)
    return flow


def trace_chain(batches: int, batch_size: int, keys: int = 7) -> ChainTrace:
    """Run ``batches`` batches of ``batch_size`` records through the job, tracing calls."""
    records = [{"key": i % keys, "value": i} for i in range(batches * batch_size)]
    sink = TestingSink()
    flow = build_flow(records, batch_size, sink)
    profiler = _Profiler()
    with tempfile.TemporaryDirectory(prefix="call-trace-") as root:
        store = CheckpointStore(open_object_store(root), "trace/job")
        executor = LocalExecutor(
            flow, parallelism=1, store=store, config=CheckpointConfig(interval=1e9)
        )
        with _profiling(profiler):
            executor.run()
    return ChainTrace(batches, batch_size, profiler.threads, list(sink.output))


@contextlib.contextmanager
def _profiling(profiler: _Profiler) -> Iterator[None]:
    threading.setprofile(profiler.hook)
    try:
        yield
    finally:
        threading.setprofile(None)


def _print(trace: ChainTrace) -> None:
    print(f"{trace.batches} batches of {trace.batch_size} records; calls per batch:")
    for task, title in (
        (SOURCE_TASK, "source task: source -> map -> map -> key_by -> network output"),
        (KEYED_TASK, "keyed task: input gate -> stateful_map -> sink"),
    ):
        thread = trace.threads[task]
        rows = trace.per_batch(task)
        files: dict[str, float] = {}
        for name, n in rows:
            where = name.split(":", 1)[0]
            files[where] = files.get(where, 0.0) + n
        entries = sum(thread.subtask_entries.values())
        print(f"\n## {title}")
        print(f"calls per batch: {sum(n for _, n in rows):.1f} in {len(files)} files")
        print(f"entries into task/subtask.py from other files (whole run): {entries}")
        for name, n in rows:
            print(f"  {n:6.2f}  {name}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="call_trace", description=__doc__)
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=100)
    ns = parser.parse_args(argv)
    _print(trace_chain(ns.batches, ns.batch_size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
