"""Spark's progress events for :mod:`.spark_system`: one query's rows read, rows written, batches.

:func:`counter` is a ``StreamingQueryListener`` (pyspark's, so built where Spark runs) that
adds up, once per ``batchId``, every progress event's ``numInputRows`` per source (the
source's topic is in its description: ``KafkaV2[Subscribe[TOPIC]]``) and the sink's
``numOutputRows``; ``recentProgress`` keeps only the last reports, the listener sees every
one. Spark calls it on its listener bus thread; readers take its ``lock``.

>>> spread([120, 80, 100, 400])
{'n': 4, 'p50': 100, 'p99': 400, 'max': 400}
"""

from __future__ import annotations

import threading
import time
from typing import Any

PHASES = ("latestOffset", "queryPlanning", "walCommit", "addBatch", "commitOffsets")
"""The parts of a micro-batch's ``durationMs`` reported (medians over batches with input)."""


def counter(name: str, topics: dict[str, str]) -> Any:
    """A ``StreamingQueryListener`` adding up the rows the query called ``name`` read per kind
    (``topics``: kind -> topic) and wrote, once per ``batchId``."""
    from pyspark.sql.streaming.listener import StreamingQueryListener  # noqa: PLC0415

    class ProgressCounter(StreamingQueryListener):
        def __init__(self) -> None:
            self.name, self.topics = name, topics
            self.lock = threading.Lock()
            self.read = dict.fromkeys(topics, 0)
            self.written = 0
            self.batches: dict[int, dict[str, Any]] = {}

        def onQueryStarted(self, event: Any) -> None: ...  # noqa: N802 (pyspark's names)
        def onQueryIdle(self, event: Any) -> None: ...  # noqa: N802
        def onQueryTerminated(self, event: Any) -> None: ...  # noqa: N802

        def onQueryProgress(self, event: Any) -> None:  # noqa: N802
            p = event.progress
            if p.name != self.name:
                return
            with self.lock:
                if p.batchId in self.batches:
                    return
                rows = 0
                for source in p.sources:
                    for kind, topic in self.topics.items():
                        if f"[{topic}]" in source.description:
                            self.read[kind] += int(source.numInputRows)
                            rows += int(source.numInputRows)
                out = max(0, int(p.sink.numOutputRows))
                self.written += out
                self.batches[p.batchId] = {
                    "rows_in": rows,
                    "ms": int(p.durationMs.get("triggerExecution", 0)),
                    "phases": {k: int(p.durationMs.get(k, 0)) for k in PHASES},
                    "done_at": time.time(),
                }

    return ProgressCounter()


def spread(values: list[int]) -> dict[str, Any]:
    """How many ``values``, their median (the lower one), p99 and max."""
    values = sorted(values)
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": values[(len(values) - 1) // 2],
        "p99": values[min(len(values) - 1, int(len(values) * 0.99))],
        "max": values[-1],
    }
