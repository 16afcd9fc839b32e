"""Spark Structured Streaming, the peer most of our users compare with: one runner, its modes.

Every workload's Spark query is started, run and read through these: the
trigger of a mode (:func:`trigger`), the query's progress reports as dicts
(:func:`progress`), the micro-batches that read input (:func:`with_input`),
their summed ``triggerExecution`` (:func:`trigger_seconds`), waiting on a
condition while watching for the query's failure (:func:`wait_until`), and
unloading the state stores a stopped query leaves in the shared driver JVM
(:func:`unload_state_stores`). The queries, one module per input:

* :mod:`.files`: W1-W3 over the suite's Parquet and JSON-lines files
  (modes ``stream``, ``available_now``, ``cold``);
* :mod:`.windows`: W5's event-time windows over Parquet (``micro-batch``,
  ``back-to-back``);
* :mod:`.rate`: W4 on Spark's ``rate`` source (``micro-batch``; ``real-time``
  tried: Spark refuses the rate source);
* :mod:`.kafka`: W4 on Kafka, a process of its own (``real-time``,
  ``micro-batch``, ``available-now`` for its warm-up).

>>> trigger_kwargs("micro-batch"), trigger_kwargs("back-to-back"), trigger_kwargs("available-now")
({'processingTime': '1 second'}, {'processingTime': '0 seconds'}, {'availableNow': True})
>>> trigger_kwargs("real-time", real_time_batch="5 minutes")
{'realTime': '5 minutes'}
>>> with_input([{"numInputRows": 0}, {"numInputRows": 3, "durationMs": {"triggerExecution": 250}}])
[{'numInputRows': 3, 'durationMs': {'triggerExecution': 250}}]
>>> trigger_seconds(_)
0.25
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from typing import Any, Literal

Mode = Literal["micro-batch", "back-to-back", "available-now", "real-time"]
MODES: tuple[Mode, ...] = ("micro-batch", "back-to-back", "available-now", "real-time")
"""``micro-batch``: a micro-batch every second (the ~1 s cadence every workload compares
at); ``back-to-back``: the same micro-batches, each as soon as the last ended;
``available-now``: what the input holds in as few batches as Spark likes, then the query
ends; ``real-time``: Spark 4's real-time mode (long batches, records flow through)."""
POLL = 0.02


class SparkQueryFailedError(RuntimeError):
    """The Spark query under measurement failed; its exception is in the message."""


def trigger_kwargs(mode: Mode, *, real_time_batch: str = "5 minutes") -> dict[str, Any]:
    """The ``DataStreamWriter.trigger`` arguments of ``mode``."""
    if mode == "micro-batch":
        return {"processingTime": "1 second"}
    if mode == "back-to-back":
        return {"processingTime": "0 seconds"}
    if mode == "available-now":
        return {"availableNow": True}
    return {"realTime": real_time_batch}


def trigger(writer: Any, mode: Mode, *, real_time_batch: str = "5 minutes") -> Any:
    """``writer`` with the trigger of ``mode``."""
    return writer.trigger(**trigger_kwargs(mode, real_time_batch=real_time_batch))


def progress(query: Any) -> list[dict[str, Any]]:
    """The query's recent progress reports, as dicts."""
    return [_as_dict(p) for p in query.recentProgress]


def with_input(reports: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The micro-batches that read at least one row."""
    return [p for p in reports if int(p.get("numInputRows", 0)) > 0]


def trigger_seconds(reports: Iterable[dict[str, Any]]) -> float:
    """Summed ``triggerExecution`` of ``reports``, in seconds."""
    return float(sum(p.get("durationMs", {}).get("triggerExecution", 0) for p in reports)) / 1000


def wait_until(query: Any, done: Callable[[], bool], *, poll: float = POLL) -> None:
    """Poll ``done`` until it holds; raise if the query fails meanwhile."""
    while not done():
        if query.exception() is not None:
            raise SparkQueryFailedError(f"Spark query failed: {query.exception()}")
        time.sleep(poll)


def unload_state_stores(spark: Any) -> None:
    """Unload the state stores a stopped query leaves loaded in the driver JVM.

    Spark keeps a stopped query's state-store providers (and their maintenance
    task) until it needs the memory; across repeats they fill the heap the next
    runs, ours included, share. ``StateStore.stop()`` unloads them all.
    """
    store = spark.sparkContext._jvm.org.apache.spark.sql.execution.streaming.state.StateStore
    store.stop()


def _as_dict(p: Any) -> dict[str, Any]:
    if isinstance(p, dict):
        return p
    if hasattr(p, "json"):
        parsed: dict[str, Any] = json.loads(p.json)
        return parsed
    return dict(p)
