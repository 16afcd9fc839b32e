"""``python -m cjob_bench run W2`` (the file suite) end to end at a tiny size: one command, one JSON document, checked answers.

Ours on real local Spark (with and without periodic checkpoints), Spark SS's
``availableNow`` query and Bytewax, W2 only, one repeat, no warm-up: it
checks that the suite runs and that every system's answer is exact, never
how fast anything is.
"""

from __future__ import annotations

import json
import pathlib

import pytest
from bench_runs import run_bench

pytestmark = [pytest.mark.s3, pytest.mark.timeout(300)]


def test_the_suite_prints_one_json_document_with_exact_answers(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("pyspark")
    pytest.importorskip("bytewax")
    saved = tmp_path / "result.json"
    args = ["run", "W2", "--peers", "spark,bytewax", "--repeats", "1"]
    args += ["--events", "20000", "--keys", "200", "--files", "2"]
    args += ["--spark-modes", "available_now", "--no-warmup", "--output", str(saved)]
    done = run_bench(args)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout)
    assert json.loads(saved.read_text()) == doc
    systems = doc["workloads"]["W2"]["systems"]
    assert set(systems) == {
        "ours/checkpoints_1s",
        "ours/no_periodic_checkpoints",
        "spark_ss/available_now",
        "bytewax/2_processes_recovery_1s",
    }
    for name, summary in systems.items():
        assert summary["failed_runs"] == 0, (name, summary["all_runs"])
        assert summary["all_correct"], (name, summary["all_runs"])
    assert doc["machine"]["cpu_count"] >= 1
    assert "ours_over_bytewax_2_processes_recovery_1s" in doc["workloads"]["W2"]["ratios"]
    assert "W2" in done.stderr and "events/s" in done.stderr  # the table
