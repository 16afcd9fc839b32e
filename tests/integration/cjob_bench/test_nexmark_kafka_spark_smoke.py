"""``python -m cjob_bench nexmark kafka-latency --system spark`` end to end on a real Kafka broker.

Nexmark q5 (sliding windows, chained aggregations) at 400 events/s for 6 s (P = 2) with Spark
Structured Streaming as the system under test (:mod:`cjob_bench.nexmark.kafka.spark_system`):
the feed writes the events live, Spark's Kafka source reads them, the Spark helper's q5 runs
on them in 1 s micro-batches checkpointed to a local directory, Spark's Kafka sink writes the
results, the ``read_committed`` watch reads them. Every window the final watermark closed must
be there, equal to the oracle's, and no other; Spark's counters must add up. (Spark's q1 on
Kafka, every bid once and its counters and latency figures, is checked by the table's test,
``test_nexmark_table.py``, whose Kafka trial of Spark is the same run.)
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
from bench_runs import run_bench
from cjob_bench.nexmark import reference
from nexmark_kafka_runs import RATE, SECONDS, P, fed_bids

pytestmark = [pytest.mark.timeout(300)]


@pytest.fixture
def libs(spark_kafka_libs: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """The jars, in the environment the benchmark's process inherits."""
    monkeypatch.setenv("CJOB_SPARK_KAFKA_LIBS", str(spark_kafka_libs))
    return spark_kafka_libs


def spark_run(query: str, work: pathlib.Path) -> dict[str, Any]:
    """``kafka-latency --system spark`` of ``query``: the run's part of the JSON document."""
    args = ["nexmark", "kafka-latency", "--system", "spark", "--query", query]
    args += ["--rate", str(RATE), "--seconds", str(SECONDS), "--partitions", str(P)]
    args += ["--drain", "60", "--keep-rows", "--work", str(work)]
    done = run_bench(args, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout)
    assert doc["system"] == "spark"
    run: dict[str, Any] = doc["run"]
    return run


def test_spark_q5_on_kafka_emits_every_window_its_watermark_closed(
    tmp_path: pathlib.Path, libs: pathlib.Path
) -> None:
    """A live stream does not end: Spark emits the windows its final watermark (the newest
    bid's time, bound 0) has passed, each equal to the oracle's, and no other."""
    run = spark_run("q5", tmp_path / "work")
    bids = fed_bids()
    watermark = max(bids["dateTime"].to_pylist())
    want = [r for r in reference.expected("q5", {"bids": bids}) if r["window_end"] <= watermark]
    rows = [json.loads(line) for line in pathlib.Path(run["rows_file"]).read_text().splitlines()]
    assert len(want) > 0
    assert reference.same("q5", rows, want) == (True, f"{len(want)} rows equal")
    figures = run["system_figures"]
    assert figures["rows_read"] == {"bids": bids.num_rows}, figures
    assert figures["rows_written"] == len(want) == run["verdict"]["output_records"], figures
    assert run["latency"]["visible_ms"]["p50"] is not None, run["latency"]
