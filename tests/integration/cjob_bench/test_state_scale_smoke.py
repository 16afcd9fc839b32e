"""``python -m cjob_bench run state-scale`` end to end at a tiny size (issue 32).

Real local Spark (P = 2), the embedded S3 server, full and incremental checkpoints and a
restore of each, and the W5 window job both ways: the benchmark runs, finds steady checkpoints in both modes, and an
incremental checkpoint writes less than it references. Never how fast anything is.
"""

from __future__ import annotations

import json
import pathlib

import pytest
from bench_runs import run_bench

pytestmark = [pytest.mark.s3, pytest.mark.timeout(600)]


def test_state_scale_reports_full_and_incremental_checkpoints_and_restores(
    tmp_path: pathlib.Path,
) -> None:
    pytest.importorskip("pyspark")
    saved = tmp_path / "state-scale.json"
    args = ["run", "state-scale", "--keys", "20000", "--rate", "2000", "--seconds", "6"]
    args += ["--interval", "0.5", "--repeats", "1", "--output", str(saved)]
    args += ["--window-events", "3000000", "--window-keys", "5000"]
    done = run_bench(args)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(saved.read_text())
    for kind in ("full", "incremental"):
        (run,) = doc["runs"][kind]
        assert run["restarts"] == 0 and run["steady_checkpoints"] >= 3, run
    for kind in ("full", "incremental", "incremental-local"):
        restored = doc["restore"][kind]
        assert restored["restarts"] == 1 and restored["restored_from"][1] is not None, restored
    full = doc["runs"]["full"][0]["steady"]
    incremental = doc["runs"]["incremental"][0]["steady"]
    assert full["uploaded_bytes"]["median"] == full["state_bytes"]["median"]
    assert incremental["uploaded_bytes"]["median"] < incremental["state_bytes"]["median"] / 3
    assert doc["full_over_incremental"]["uploaded_bytes"] > 3
    window = doc["window_job"]
    assert window["all_windows_exact"], window["runs"]
    assert [r["incremental"] for r in window["runs"]["incremental"]] == [True]
    assert [r["incremental"] for r in window["runs"]["full"]] == [False]
