"""What the Nexmark-on-Kafka smoke tests share: the feed they run and the q1 exactness check.

Both systems (ours and Spark's) run q1 on the same small live feed; each run's
committed output must hold every bid once and equal the oracle's rows.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pyarrow as pa
from cjob_bench.nexmark import generator, reference
from cjob_bench.nexmark.kafka import feed

RATE, SECONDS, P = 400, 6, 2
"""The feed of every smoke run: events per second, seconds, partitions (= parallelism)."""


def fed_bids() -> pa.Table:
    """The bids the feed of a run at RATE for SECONDS sends (regenerated)."""
    cfg = feed.live_config(RATE, SECONDS, P)
    return pa.concat_tables(
        generator.generate(cfg, g, 0, stop - first).bids
        for g, (first, stop) in enumerate(cfg.generator_range(g) for g in range(P))
    )


def check_every_bid_committed_once(run: dict[str, Any]) -> pa.Table:
    """Assert a q1 run's committed rows are the fed bids, each once, as the oracle says;
    the bids."""
    bids = fed_bids()
    assert run["feed"]["by_kind"]["bids"] == bids.num_rows > 0, run["feed"]
    rows = [json.loads(line) for line in pathlib.Path(run["rows_file"]).read_text().splitlines()]
    assert reference.same("q1", rows, reference.expected("q1", {"bids": bids})) == (
        True,
        f"{bids.num_rows} rows equal",
    )
    verdict = run["verdict"]
    assert verdict["output_records"] == verdict["sink_records_in"] == bids.num_rows, verdict
    assert verdict["checks"]["every_output_committed"] is True, verdict
    return bids
