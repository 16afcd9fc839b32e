"""Nexmark queries on the in-process executor: exactly-once checkpoints, a committed file sink, timed.

Each run builds the query (:func:`.queries.build`) over the Parquet files of
:mod:`.files`, runs it on :class:`~barrier_runtime.testing.LocalExecutor` with
aligned exactly-once checkpoints to a local checkpoint store every
``interval`` seconds, its results committed by a ``FileSink`` (JSON lines,
two-phase commit), and reads the committed results back. The wall time runs
from the executor's start to its end (the final checkpoint included); the
rate is of the events the query reads (the kinds of its sources), which is
what it processes; the CPU time is the process's (every thread: sources,
steps, sink, checkpoint uploads and the coordinator). :func:`check` compares the results with the oracle.

This is the small in-process measurement: one Python process, P threads, no
Spark and no S3. The sustainable-throughput harness comes later.
"""

from __future__ import annotations

import dataclasses
import pathlib
import time
from typing import Any

from barrier_runtime.connectors.discard import DiscardSink
from barrier_runtime.connectors.files import FileSink
from barrier_runtime.core.faults import FaultInjector
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import JobResult, LocalExecutor
from cjob_bench.nexmark import files, queries, reference
from cjob_bench.nexmark.config import NexmarkConfig

Row = dict[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class LocalRun:
    """One run of one query: what the job did, what it committed, how long it took."""

    query: str
    result: JobResult
    rows: list[Row]
    seconds: float
    cpu_seconds: float
    """User + system CPU time of the whole process (every thread) during the run."""
    events_read: int

    def summary(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "seconds": round(self.seconds, 3),
            "events_read": self.events_read,
            "events_per_second": round(self.events_read / self.seconds) if self.seconds else None,
            "cpu_seconds": round(self.cpu_seconds, 3),
            "cpu_seconds_per_million_events": (
                round(self.cpu_seconds * 1e6 / self.events_read, 3) if self.events_read else None
            ),
            "rows": len(self.rows),
            "attempts": self.result.attempts,
            "checkpoints_completed": len(self.result.completed_checkpoints),
        }


def kinds_read(query: str) -> tuple[str, ...]:
    """The kinds of events ``query``'s sources read (its source step ids)."""
    flow = queries.build(query, "/nowhere", DiscardSink())
    return tuple(k for k in files.KINDS if k in flow.step_ids)


def run(
    query: str,
    data: pathlib.Path,
    work: pathlib.Path,
    *,
    parallelism: int = 2,
    interval: float = 1.0,
    batch_size: int = 8_192,
    fault_injector: FaultInjector | None = None,
    max_restarts: int = 0,
) -> LocalRun:
    """Run ``query`` over the events under ``data``; its store and output go under ``work``."""
    cfg = files.read_config(data)
    out = work / f"{query}-out"
    sink = FileSink(str(out))
    flow = queries.build(
        query, str(data), sink, batch_size=batch_size, bound_ms=watermark_bound(cfg)
    )
    store = CheckpointStore(open_object_store(str(work / f"{query}-store")), f"nexmark/{query}")
    executor = LocalExecutor(
        flow,
        parallelism=parallelism,
        store=store,
        config=CheckpointConfig(interval=interval),
        fault_injector=fault_injector,
        max_restarts=max_restarts,
    )
    started, cpu = time.perf_counter(), time.process_time()
    result = executor.run()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    read = sum(files.read_kind_rows(data, kind) for kind in kinds_read(query))
    return LocalRun(query, result, list(sink.read_committed()), seconds, cpu, read)


def watermark_bound(cfg: NexmarkConfig) -> int:
    """Watermark bound: how far event time goes back within a generator's file (its
    out-of-order groups), in ms, rounded up."""
    group = cfg.out_of_order_group_size
    return 0 if group == 1 else -(-group * cfg.inter_event_delay_us // 1000)


def check(run_: LocalRun, data: pathlib.Path) -> tuple[bool, str]:
    """Whether the run's committed rows equal the oracle's over the same events."""
    events = {kind: files.read_kind(data, kind) for kind in kinds_read(run_.query)}
    return reference.same(run_.query, run_.rows, reference.expected(run_.query, events))
