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


def check_lag_and_latency(run: dict[str, Any], bids: pa.Table) -> dict[str, Any]:
    """Assert a q1 run's lag series drained and its latency figures are there and sane (never
    how fast): every bid measured at most once, visible after it reached the sink; the
    latency figures."""
    series = run["lag_series"]
    assert len(series) >= SECONDS - 1 and series[-1]["lag"] == 0, series
    assert all(p["produced"] >= p["consumed"] >= 0 for p in series), series
    latency: dict[str, Any] = run["latency"]
    assert 0 < latency["measured"] <= latency["records"] == bids.num_rows, latency
    visible, to_sink = latency["visible_ms"], latency["sink_before_commit_ms"]
    assert 0 < visible["p50"] <= visible["p99"] <= visible["max"] < 30_000, latency
    assert 0 <= to_sink["p50"] <= to_sink["p99"] <= visible["max"], latency
    assert to_sink["p50"] <= visible["p50"], latency  # written before a reader sees it
    return latency
