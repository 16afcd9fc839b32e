"""The demo's keyed running count with an exactly-once file sink, as a pipeline file.

``build_flow(["--out", URL, "--keys", "100", ...])``: the Spark driver and every
worker load this file by path and call ``build_flow`` with the same arguments.
"""

from __future__ import annotations

import argparse

from barrier_runtime.connectors.files import FileSink
from barrier_runtime.demo import running_count_flow


def build_flow(args):
    parser = argparse.ArgumentParser(prog="running_count_pipeline")
    parser.add_argument("--out", required=True)
    parser.add_argument("--keys", type=int, default=200)
    parser.add_argument("--events-per-key", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--rate", type=float, default=None, help="events/s per partition")
    ns = parser.parse_args(args)
    return running_count_flow(
        FileSink(ns.out),
        keys=ns.keys,
        events_per_key=ns.events_per_key,
        partitions=ns.partitions,
        batch_size=ns.batch_size,
        rate_per_partition=ns.rate,
    )
