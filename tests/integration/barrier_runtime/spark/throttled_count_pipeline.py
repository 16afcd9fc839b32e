"""The keyed running count behind a sink throttled to 1/``slowdown`` of the source rate.

``build_flow(["--out", URL, "--rate", "12000", "--slowdown", "10", ...])``: the
Spark driver and every worker load this file by path. The flow and the exact
meaning of every argument are in
:func:`cjob_bench.probe.throttled_count_flow`;
:meth:`cjob_bench.probe.ThrottledJob.pipeline_args` writes these
arguments. The probe is benchmark code in ``bench/``, not in the runtime
wheel: pytest puts ``bench/`` on the driver's ``sys.path`` but Spark's Python
workers start with only their ``PYTHONPATH``, so this file puts ``bench/`` on
``sys.path`` itself before importing it.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from barrier_runtime.connectors.files import FileSink

BENCH = pathlib.Path(__file__).resolve().parents[4] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from cjob_bench import probe  # noqa: E402


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
