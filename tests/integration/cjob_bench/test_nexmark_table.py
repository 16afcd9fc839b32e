"""``python -m cjob_bench nexmark table`` end to end, at a tiny scale: every step runs and the
table is made of what they measured — never how fast anything is.

q1 only, both systems: one Kafka trial each on the smoke feed (400 events/s for 6 s, P = 2;
``--rates``: no search), each ``kafka-sustain`` in a process of its own with its own broker,
every bid committed once and equal to the oracle's row for it (for Spark Structured
Streaming this is also the smoke test of its Kafka source and sink with the Spark helper's
q1: its own counters add up to the feed's); then each system's CPU run over the same 4,000
events on files, every process counted from /proc, both outputs checked against the oracle
after the runs.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
from bench_runs import run_bench
from nexmark_kafka_runs import (
    RATE,
    SECONDS,
    P,
    check_every_bid_committed_once,
    check_lag_and_latency,
)

pytestmark = [pytest.mark.s3, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def table(
    tmp_path_factory: pytest.TempPathFactory, spark_kafka_libs: pathlib.Path
) -> tuple[dict[str, Any], list[str]]:
    """The run's document and its Markdown table's lines."""
    tmp_path = tmp_path_factory.mktemp("table")
    out, markdown = tmp_path / "table.json", tmp_path / "table.md"
    args = ["nexmark", "table", "--queries", "q1", "--rates", str(RATE)]
    args += ["--seconds", str(SECONDS), "--cpu-events", "4000", "--no-warm-up", "--keep-rows"]
    args += ["--work", str(tmp_path / "work"), "--out", str(out), "--markdown", str(markdown)]
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CJOB_SPARK_KAFKA_LIBS", str(spark_kafka_libs))
        done = run_bench(args, timeout=580)
    assert done.returncode == 0, done.stderr[-3000:]
    assert P == 2  # the table runs at the default parallelism, as the smoke feed is cut
    return json.loads(out.read_text()), markdown.read_text().splitlines()


@pytest.mark.parametrize("system", ["ours", "spark"])
def test_each_system_committed_every_bid_of_its_kafka_trial_once(
    table: tuple[dict[str, Any], list[str]], system: str
) -> None:
    doc, _ = table
    search = doc["sustain"]["q1"][system]
    assert search["system"] == system and [t["rate"] for t in search["trials"]] == [RATE]
    [trial] = search["trials"]
    bids = check_every_bid_committed_once(trial)
    check_lag_and_latency(trial, bids)
    if system == "spark":
        figures = trial["system_figures"]
        assert figures["rows_read"] == {"bids": bids.num_rows}, figures
        assert figures["rows_written"] == bids.num_rows, figures
        assert figures["batches_with_input"] >= 2 and figures["trigger"] == "1 second", figures


@pytest.mark.parametrize("system", ["ours", "spark"])
def test_each_system_cpu_run_is_counted_and_equals_the_oracle(
    table: tuple[dict[str, Any], list[str]], system: str
) -> None:
    doc, _ = table
    run = doc["cpu"]["q1"][system]
    assert "error" not in run, run.get("error")
    assert run["correct"]["equal"] is True, run["correct"]
    assert run["correct"]["rows"] == run["events_read"] > 0  # q1: a row per bid read
    assert run["cpu_seconds"] > 0 and run["cpu_seconds_per_million_events"] > 0


def test_the_table_row_is_made_of_those_figures(table: tuple[dict[str, Any], list[str]]) -> None:
    doc, lines = table
    [row] = doc["rows"]
    assert row["equal"] is True
    for system in ("ours", "spark"):
        cost = doc["cpu"]["q1"][system]["cpu_seconds_per_million_events"]
        assert row[f"{system}_cpu_s_per_m"] == cost
        assert row[f"{system}_rate"] == doc["sustain"]["q1"][system]["highest_sustained_rate"]
    assert lines[0].startswith("| query |") and lines[2].startswith("| q1 |"), lines
