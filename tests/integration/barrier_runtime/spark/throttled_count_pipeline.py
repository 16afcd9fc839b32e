"""The keyed running count behind a sink throttled to 1/``slowdown`` of the source rate.

``build_flow(["--out", URL, "--rate", "12000", "--slowdown", "10", ...])``: the
Spark driver and every worker load this file by path. The flow and the exact
meaning of every argument are in
:func:`barrier_runtime.spark.probe.throttled_count_flow`;
:meth:`barrier_runtime.spark.probe.ThrottledJob.pipeline_args` writes these
arguments.
"""

from __future__ import annotations

import argparse

from barrier_runtime.connectors.files import FileSink
from barrier_runtime.spark import probe


def build_flow(args):
    parser = argparse.ArgumentParser(prog="throttled_count_pipeline")
    parser.add_argument("--out", required=True)
    defaults = probe.ThrottledJob()
    parser.add_argument("--keys", type=int, default=defaults.keys)
    parser.add_argument("--events-per-key", type=int, default=defaults.events_per_key)
    parser.add_argument(
        "--rate",
        type=float,
        default=defaults.source_rate,
        help="source rate, events/s over all partitions",
    )
    parser.add_argument(
        "--slowdown",
        type=float,
        default=defaults.slowdown,
        help="the sink side consumes at rate / slowdown",
    )
    parser.add_argument("--parallelism", type=int, default=defaults.parallelism)
    parser.add_argument("--batch-size", type=int, default=defaults.batch_size)
    parser.add_argument("--payload-bytes", type=int, default=defaults.payload_bytes)
    ns = parser.parse_args(args)
    job = probe.ThrottledJob(
        keys=ns.keys,
        events_per_key=ns.events_per_key,
        source_rate=ns.rate,
        slowdown=ns.slowdown,
        parallelism=ns.parallelism,
        batch_size=ns.batch_size,
        payload_bytes=ns.payload_bytes,
    )
    return probe.throttled_count_flow(FileSink(ns.out), job)
