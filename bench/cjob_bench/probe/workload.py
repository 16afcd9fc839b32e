"""The workload: the keyed running count behind a sink paced at 1/``slowdown`` of the source.

:class:`ThrottledJob` holds the knobs (the pipeline file
``tests/integration/barrier_runtime/spark/throttled_count_pipeline.py`` takes
them as arguments); :func:`throttled_count_flow` builds the dataflow;
:class:`SinkPacer` is the exact throttle.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from barrier_runtime.api import Dataflow, Record, Sink
from barrier_runtime.connectors.generator import GeneratorSource
from barrier_runtime.demo import count_event
from barrier_runtime.state import key_groups

MAX_PARALLELISM = 128
SOURCE_STEP, SINK_STEP, SOURCE_TASK = "events", "out", "events"
_CATCH_UP = 0.1
"""Seconds a paced sink subtask may be behind its schedule and still make the time up."""


@dataclass(frozen=True, slots=True)
class ThrottledJob:
    """The workload's knobs; :meth:`pipeline_args` passes them to the pipeline file."""

    keys: int = 120
    events_per_key: int = 300
    source_rate: float = 12_000.0
    """Events/s the source emits when nothing holds it back (over all partitions)."""
    slowdown: float = 10.0
    """The sink side consumes at ``source_rate / slowdown`` events/s."""
    parallelism: int = 3
    batch_size: int = 30
    """Events per source batch: the most records a channel batch can carry."""
    payload_bytes: int = 4096

    @property
    def total_events(self) -> int:
        return self.keys * self.events_per_key

    @property
    def sink_rate(self) -> float:
        return self.source_rate / self.slowdown

    def pipeline_args(self, out_url: str) -> list[str]:
        return [
            "--out",
            out_url,
            "--keys",
            str(self.keys),
            "--events-per-key",
            str(self.events_per_key),
            "--rate",
            str(self.source_rate),
            "--slowdown",
            str(self.slowdown),
            "--parallelism",
            str(self.parallelism),
            "--batch-size",
            str(self.batch_size),
            "--payload-bytes",
            str(self.payload_bytes),
        ]

    def expected_output(self) -> list[Record]:
        """The analytic result: every key's running count, in order."""
        return [
            {"key": f"k{k}", "seq": s, "count": s + 1}
            for k in range(self.keys)
            for s in range(self.events_per_key)
        ]


def throttled_count_flow(sink: Sink, job: ThrottledJob) -> Dataflow:
    """``events`` (paced) → ``pad`` → ``by-key`` ⇒ ``count`` → ``throttle`` (paced) → ``out``.

    ``pad`` adds a distinct ``payload_bytes`` string to every event, so records
    in flight are big enough for memory growth to show; ``count`` drops it.
    One source partition per worker, each paced at ``source_rate / P``.
    """
    flow = Dataflow("throttled-count", max_parallelism=MAX_PARALLELISM)
    source = GeneratorSource(
        keys=job.keys,
        events_per_key=job.events_per_key,
        partitions=job.parallelism,
        batch_size=job.batch_size,
        rate_per_partition=job.source_rate / job.parallelism,
    )
    padded = flow.source(SOURCE_STEP, source).map("pad", padder(job.payload_bytes))
    counted = padded.key_by("by-key", "key").stateful_map("count", count_event)
    counted.map_batches("throttle", SinkPacer(job)).sink(SINK_STEP, sink)
    return flow


def padder(size: int) -> Callable[[Record], Record]:
    """The ``pad`` step: adds a distinct ``payload`` string of ``size`` characters."""

    def pad(record: Record) -> Record:
        tag = f"{record['key']}:{record['seq']}:"
        return {**record, "payload": tag.ljust(size, ".")}

    return pad


class SinkPacer:
    """A batch step that makes the sink side consume exactly ``job.sink_rate`` events/s.

    Each sink subtask gets the share of ``job.sink_rate`` that matches the share
    of the keys it owns (the keys split unevenly over key groups, so equal
    shares would leave the busiest subtask the bottleneck), and a batch of *n*
    records costs it *n / rate* seconds: the subtask sleeps until its *due*
    time, which advances by *n / rate* per batch. Time spent processing
    between batches is made up (a subtask up to ``_CATCH_UP`` s late does not
    sleep), longer idle time is not saved up as a burst (``due`` restarts from
    now). So the sink side together consumes at most ``job.sink_rate``
    events/s (plus at most ``_CATCH_UP`` s of catching up after a stall), and
    exactly that while it has input and the CPU keeps up. A batch at a keyed
    subtask holds only keys that subtask owns, so its first key names the
    subtask. Each subtask runs on its own thread, hence the thread-local
    clock (workers on threads share this object).

    >>> slept = []
    >>> job = ThrottledJob(keys=6, source_rate=12_000.0, slowdown=10.0)
    >>> pace = SinkPacer(job, monotonic=lambda: 0.0, sleep=slept.append)
    >>> round(sum(pace.subtask_rates.values()), 6)
    1200.0
    >>> batch = pa.record_batch({"key": ["k0"] * 20})
    >>> _ = pace(batch); _ = pace(batch)  # at t = 0 both: the second waits for 40 records
    >>> [round(seconds * pace.rates["k0"]) for seconds in slept]
    [20, 40]
    """

    def __init__(
        self,
        job: ThrottledJob,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        self._monotonic = monotonic
        self._sleep = sleep
        owner = {f"k{k}": owner_of(f"k{k}", job.parallelism) for k in range(job.keys)}
        owned = collections.Counter(owner.values())
        self.subtask_rates = {o: job.sink_rate * n / job.keys for o, n in owned.items()}
        """Events/s each sink subtask consumes: its share of the keys times ``job.sink_rate``."""
        self.rates = {key: self.subtask_rates[o] for key, o in owner.items()}
        """The rate of the subtask that owns each key."""
        self._local = threading.local()

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if not batch.num_rows:
            return batch
        rate = self.rates[batch.column("key")[0].as_py()]
        now = self._monotonic()
        due = getattr(self._local, "due", now)
        due = (due if now - due <= _CATCH_UP else now) + batch.num_rows / rate
        self._local.due = due
        if due > now:
            self._sleep(due - now)
        return batch


def owner_of(key: str, parallelism: int) -> int:
    """The subtask of a keyed step that owns ``key`` at ``parallelism``."""
    group = key_groups.key_group_for(key, MAX_PARALLELISM)
    return key_groups.subtask_for_key_group(group, parallelism, MAX_PARALLELISM)
