"""``python -m cjob_bench run W5`` end to end at a tiny size: both systems, exact windows, latencies.

Ours on real local Spark with 1 s checkpoints and Spark Structured Streaming's
windowed count, one repeat: it checks that the benchmark runs, that every
window of both systems is exact, and that latencies are measured, never how
fast anything is.
"""

from __future__ import annotations

import json
import pathlib

import pytest
from bench_runs import run_bench

pytestmark = [pytest.mark.s3, pytest.mark.timeout(300)]


def test_w5_prints_exact_windows_and_latencies_for_both_systems(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("pyspark")
    saved = tmp_path / "w5.json"
    args = [
        "run",
        "W5",
        "--peers",
        "spark",
        "--events",
        "60000",
        "--keys",
        "50",
        "--files",
        "3",
        "--span-minutes",
        "6",
    ]
    args += ["--repeats", "1", "--output", str(saved)]
    done = run_bench(args)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout)
    assert json.loads(saved.read_text()) == doc
    for system in ("ours", "spark_ss", "spark_ss_unthrottled"):
        (run,) = doc["runs"][system]
        assert run["check"] == {"missing": 0, "extra": 0, "wrong_count": 0}, (system, run)
        assert run["latency_ms"]["p99"] is not None, (system, run)
        assert doc["summary"][system]["all_runs_exact"]
    # Spark never emits the windows its final watermark leaves open; ours fires them at the end
    assert doc["runs"]["ours"][0]["window_results"] > doc["runs"]["spark_ss"][0]["window_results"]
    assert doc["summary"]["throughput_ratio_ours_over_spark_ss"] > 0
