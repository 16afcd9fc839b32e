"""A Nexmark query as a pipeline file for ``cjob run``, as a user runs one.

    cjob run bench/cjob_bench/nexmark/pipeline.py -p 2 --store URL -- \\
        --query q1 --data /data/nexmark --output /tmp/q1-out

builds :func:`.queries.build` over the Parquet files under ``--data`` (the
watermark bound from their ``nexmark.json``), its results committed as JSON
lines by a ``FileSink`` under ``--output``. ``bench/`` must be importable
(``PYTHONPATH``) on the driver and the workers.
"""

from __future__ import annotations

import argparse
import pathlib
from collections.abc import Sequence

from barrier_runtime.api import Dataflow
from barrier_runtime.connectors.files import FileSink
from cjob_bench.nexmark import files, local, queries


def build_flow(args: Sequence[str]) -> Dataflow:
    parser = argparse.ArgumentParser(prog="nexmark pipeline")
    parser.add_argument("--query", required=True, choices=queries.QUERIES)
    parser.add_argument("--data", required=True, type=pathlib.Path)
    parser.add_argument("--output", required=True)
    parser.add_argument("--batch-size", type=int, default=8_192)
    ns = parser.parse_args(list(args))
    bound = local.watermark_bound(files.read_config(ns.data))
    sink = FileSink(ns.output)
    return queries.build(ns.query, str(ns.data), sink, batch_size=ns.batch_size, bound_ms=bound)
