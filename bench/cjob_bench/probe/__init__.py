"""Back-pressure on Spark, measured: a throttled workload, its memory bound, and a probe.

Shared by ``tests/integration/barrier_runtime/spark/test_spark_backpressure.py``
and ``python -m cjob_bench run backpressure``, so the test asserts exactly what the
benchmark reports; benchmark code, not shipped in the runtime wheel. What belongs here:

* :mod:`~.workload`: :class:`ThrottledJob` and :func:`throttled_count_flow`,
  the keyed running count with a ``payload_bytes`` string on every event, the
  source paced at ``source_rate`` events/s and the sink side paced at exactly
  ``source_rate / slowdown`` (:class:`SinkPacer`);
* :mod:`~.bound`: :func:`in_flight_bound`, what the configuration lets one
  worker hold — the bound the test holds each worker's RSS growth to;
* :mod:`~.sampling`: :class:`JobProbe` runs a
  :class:`~barrier_runtime.spark.driver.SparkDriver` while sampling every
  worker's resident memory (``VmRSS`` of ``/proc/<pid>/status``) and the
  job's record counters;
* :mod:`~.figures`: :func:`summarise` turns a probed run into JSON figures.

Why the worker's memory is bounded (one worker hosts subtask *i* of the source
task ``events → pad → by-key`` and of the task ``count → throttle → out``):
records between the two tasks sit only in the ``P·P`` channels of the keyed
edge. A sending subtask puts at most one batch per channel per input batch and
then waits until every output channel is below its capacity ``C`` (the
back-pressure wait), so a local channel holds at most ``C`` batches; a network
channel holds at most ``C`` batches *in total* at both ends, because every data
batch needs a credit and the receiver grants only ``C`` plus one per batch its
task has taken. A worker has one local and ``P-1`` remote channels in each
direction: at most ``(2P-1)·C`` batches, plus the batch each of its two
subtasks has in hand. An unaligned checkpoint persists what the channels hold:
its channel state references the same rows until the upload pickles them into
one blob, and with ``max_concurrent = 1`` there is one such blob at a time.
Nothing else queues records: the source reads only when it may emit, and the
sink stages at most a checkpoint interval or two of (small) output rows.
:class:`MemoryBound` adds these up from the configuration.
"""

from cjob_bench.probe.bound import (
    MemoryBound,
    MiB,
    in_flight_bound,
    records_in_flight_bound,
)
from cjob_bench.probe.figures import WorkerMemory, summarise
from cjob_bench.probe.sampling import JobProbe, ProbeResult, Sample, read_rss
from cjob_bench.probe.workload import SinkPacer, ThrottledJob, throttled_count_flow

__all__ = [
    "JobProbe",
    "MemoryBound",
    "MiB",
    "ProbeResult",
    "Sample",
    "SinkPacer",
    "ThrottledJob",
    "WorkerMemory",
    "in_flight_bound",
    "read_rss",
    "records_in_flight_bound",
    "summarise",
    "throttled_count_flow",
]
