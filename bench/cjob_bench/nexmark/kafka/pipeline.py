"""Our side as a pipeline file: a Nexmark query over Kafka sources into the transactional Kafka sink.

``build_flow(["--bootstrap", HOST_PORT, "--prefix", NAME, "--query", "q1", "--out-topic", OUT,
"--txn-prefix", ID])``: the Spark driver and every worker load this file by path with the same
arguments (``cjob run`` does the same), so it puts ``bench/`` on ``sys.path`` itself.

    {prefix}-{kind}  KafkaSource per kind the query reads (offsets in our checkpoints),
                     event time from ``dateTime``, watermarks ``--bound-ms`` behind
      -> the query, as :func:`cjob_bench.nexmark.queries.build` builds it for files
      -> StampedKafkaSink: the transactional KafkaSink (one Kafka transaction per
         checkpoint, exactly-once), each record stamped ``_written_us`` when the
         sink writer took it (the sink's write time, before the commit); with
         ``--probe-dir`` every commit's wall-clock start and end logged there
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from barrier_runtime.api import Dataflow, Stream, sinks
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api.watermarks import BoundedOutOfOrderness
from barrier_runtime.connectors.kafka import KafkaSource

BENCH = pathlib.Path(__file__).resolve().parents[3]
if str(BENCH) not in sys.path:  # loaded by path on Spark's workers
    sys.path.insert(0, str(BENCH))

from cjob_bench.nexmark import queries  # noqa: E402
from cjob_bench.workloads.w4_kafka.pipeline import ProbedKafkaSink  # noqa: E402

WRITTEN = "_written_us"
"""The column the sink adds: wall clock (µs) when its writer took the record."""


class KafkaSources:
    """``source(kind)`` for :data:`cjob_bench.nexmark.queries.ALL`: the topic of that kind."""

    def __init__(
        self,
        flow: Dataflow,
        bootstrap: str,
        prefix: str,
        *,
        batch_size: int = 2_000,
        bound_ms: int = 0,
        poll_timeout: float = 0.05,
    ) -> None:
        self.flow, self.bootstrap, self.prefix = flow, bootstrap, prefix
        self.batch_size, self.bound_ms, self.poll_timeout = batch_size, bound_ms, poll_timeout

    def __call__(self, kind: str) -> Stream:
        source = KafkaSource(
            self.bootstrap,
            f"{self.prefix}-{kind}",
            batch_size=self.batch_size,
            poll_timeout=self.poll_timeout,
        )
        return self.flow.source(
            kind, source, timestamps="dateTime", watermarks=BoundedOutOfOrderness(self.bound_ms)
        )


class StampedKafkaSink(ProbedKafkaSink):
    """A :class:`KafkaSink` whose records carry :data:`WRITTEN` (the sink's write time); with
    a ``probe_dir`` (profile runs) each commit's start and end are logged there too."""

    def writer(self, step_id: str, subtask: int, parallelism: int) -> sinks.SinkWriter:
        return _StampedWriter(super().writer(step_id, subtask, parallelism))


class _StampedWriter(sinks.SinkWriter):
    def __init__(self, inner: sinks.SinkWriter) -> None:
        self.inner = inner

    def write(self, records: Sequence[batch_mod.Record]) -> None:
        now = time.time_ns() // 1000
        self.inner.write([{**r, WRITTEN: now} for r in records])

    def write_batch(self, batch: pa.RecordBatch) -> None:
        now = time.time_ns() // 1000
        stamp = pa.array([now] * batch.num_rows, pa.int64())
        self.inner.write_batch(batch.append_column(WRITTEN, stamp))

    def pre_commit(self, checkpoint_id: int) -> sinks.Transaction | None:
        return self.inner.pre_commit(checkpoint_id)

    def close(self) -> None:
        self.inner.close()


def build(
    query: str,
    bootstrap: str,
    prefix: str,
    sink: sinks.Sink,
    *,
    batch_size: int = 2_000,
    bound_ms: int = 0,
) -> Dataflow:
    """The dataflow of ``query`` over the topics ``{prefix}-{kind}``, its results into ``sink``."""
    if query not in queries.ALL:
        raise queries.UnknownQueryError(
            f"no Nexmark query {query!r}; choose one of {', '.join(queries.ALL)}"
        )
    flow = Dataflow(f"nexmark-kafka-{query}")
    sources = KafkaSources(flow, bootstrap, prefix, batch_size=batch_size, bound_ms=bound_ms)
    queries.ALL[query](flow, sources, sink)
    return flow


def build_flow(args: Sequence[str]) -> Dataflow:
    parser = argparse.ArgumentParser(prog="nexmark-kafka-pipeline")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--query", required=True)
    parser.add_argument("--out-topic", required=True)
    parser.add_argument("--txn-prefix", required=True, help="transactional.id prefix (per run)")
    parser.add_argument("--staging-url", default=None, help="the sink's staging_url")
    parser.add_argument("--batch-size", type=int, default=2_000)
    parser.add_argument("--bound-ms", type=int, default=0)
    parser.add_argument("--probe-dir", default=None, help="profile run: log every commit")
    ns = parser.parse_args(list(args))
    sink: Any = StampedKafkaSink(
        ns.bootstrap,
        ns.out_topic,
        transactional_id_prefix=ns.txn_prefix,
        staging_url=ns.staging_url,
        probe_dir=ns.probe_dir,
    )
    return build(
        ns.query, ns.bootstrap, ns.prefix, sink, batch_size=ns.batch_size, bound_ms=ns.bound_ms
    )
