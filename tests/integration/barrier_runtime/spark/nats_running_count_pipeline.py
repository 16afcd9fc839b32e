"""The keyed running count over a NATS JetStream stream, with the exactly-once file sink.

``build_flow(["--servers", URL, "--stream", NAME, "--out", URL, ...])``: the Spark
driver and every worker load this file by path and call ``build_flow`` with the
same arguments. Events are JSON ``{"key", "seq"}`` on the subjects
``{stream}.p0 … {stream}.p{partitions-1}`` (one source partition each, every key
on one subject); the source is bounded, so the job ends at the stream's last
sequence. ``--rate`` paces each source subtask (events/s) so that a run lasts
long enough to be killed several times. With ``--sink-subject`` the counts go to
that NATS subject instead (the exactly-once ``NatsSink``, large transactions
staged under ``--out``).
"""

from __future__ import annotations

import argparse
import time

from barrier_runtime.api import Dataflow
from barrier_runtime.connectors.files import FileSink
from barrier_runtime.connectors.nats import NatsSink, NatsSource
from barrier_runtime.demo import count_event


def subjects(stream, partitions):
    return [f"{stream}.p{p}" for p in range(partitions)]


def build_flow(args):
    parser = argparse.ArgumentParser(prog="nats_running_count_pipeline")
    parser.add_argument("--servers", required=True)
    parser.add_argument("--stream", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--rate", type=float, default=None, help="events/s per source subtask")
    parser.add_argument("--sink-subject", help="publish the counts to NATS, not to files")
    ns = parser.parse_args(args)
    flow = Dataflow("nats-running-count")
    source = NatsSource(
        ns.servers,
        ns.stream,
        subjects=subjects(ns.stream, ns.partitions),
        bounded=True,
        batch_size=ns.batch_size,
    )
    events = flow.source("events", source)
    if ns.rate:
        events = events.map_batches("pace", _pace(ns.rate))
    counted = events.key_by("by-key", "key").stateful_map("count", count_event)
    if ns.sink_subject:
        counted.sink("out", NatsSink(ns.servers, ns.sink_subject, staging_url=ns.out))
    else:
        counted.sink("out", FileSink(ns.out))
    return flow


def _pace(rate):
    def pace(batch):
        time.sleep(batch.num_rows / rate)
        return batch

    return pace
