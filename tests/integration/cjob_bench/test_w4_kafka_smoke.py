"""``python -m cjob_bench run W4-kafka`` end to end at a tiny size: ours and Spark micro-batch on a real Kafka.

One broker (the script's own ``EmbeddedKafkaBroker``), 500 events/s for 4 s, one repeat of
ours (aligned, exactly-once, on real local Spark) and of Spark Structured Streaming with a
micro-batch trigger and Spark's Kafka connector. It checks the JSON document's shape, that
every record produced reached the ``read_committed`` consumer exactly once, and that the
latencies are positive — never how fast anything is.
"""

from __future__ import annotations

import json
import pathlib

import pytest
from bench_runs import run_bench

pytestmark = [pytest.mark.s3, pytest.mark.timeout(420)]

SYSTEMS = ("ours-aligned", "spark-micro-batch")


def test_w4_kafka_accounts_for_every_record_of_ours_and_spark(
    tmp_path: pathlib.Path, spark_kafka_libs: pathlib.Path
) -> None:
    saved = tmp_path / "w4-kafka.json"
    args = [
        "run",
        "W4-kafka",
        "--rates",
        "500",
        "--table-rate",
        "500",
        "--table-repeats",
        "1",
        "--repeats",
        "1",
    ]
    args += ["--seconds", "4", "--warmup", "1", "--drain", "20", "--systems", ",".join(SYSTEMS)]
    args += ["--out", str(saved)]
    done = run_bench(args, timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout)
    assert json.loads(saved.read_text()) == doc
    assert doc["versions"]["kafka_broker"], doc["versions"]
    assert doc["versions"]["spark_kafka_connector"].startswith("spark-sql-kafka-0-10_2.13-")
    assert {r["system"] for r in doc["runs"]} == set(SYSTEMS)
    for run in doc["runs"]:
        assert "error" not in run, run
        assert run["expected"] == 2000, run
        assert run["received_unique"] == run["expected"] and run["lost"] == 0, run
        assert run["measured_records"] == run["expected"] - run["warmup_records"] > 0, run
        latency = run["latency_ms"]
        assert 0 < latency["p50"] <= latency["p99"] <= latency["p99_9"] <= latency["max"], run
    (ours,) = [r for r in doc["runs"] if r["system"] == "ours-aligned"]
    assert ours["duplicates"] == 0, ours  # exactly-once; Spark's sink may duplicate
    assert ours["system_figures"]["checkpoints_completed"] >= 1, ours
    for system in SYSTEMS:
        cell = doc["summary"][system]["500"]
        assert cell["repeats"] == 1 and cell["latency_ms_median"]["p99"] > 0, cell
    assert "| 500 |" in doc["table_markdown"]
