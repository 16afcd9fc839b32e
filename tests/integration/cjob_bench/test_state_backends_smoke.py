"""``python -m cjob_bench run state-backends`` at a tiny size (issue 32's choice of store).

Each candidate runs in its own process, loads every key, rewrites some, holds snapshots
while writes go on, exports a base from each and finds every key again: the benchmark
reports all three without an error. Never how fast anything is.
"""

from __future__ import annotations

import json
import pathlib

from bench_runs import run_bench


def test_state_backends_reports_every_candidate(tmp_path: pathlib.Path) -> None:
    saved = tmp_path / "state-backends.json"
    args = ["run", "state-backends", "--keys", "50000", "--updates", "1000", "--rounds", "2"]
    args += ["--reads", "2000", "--output", str(saved)]
    done = run_bench(args)
    assert done.returncode == 0, done.stderr[-3000:]
    results = {r["candidate"]: r for r in json.loads(saved.read_text())["results"]}
    assert sorted(results) == ["lmdb", "rocksdict", "sqlite"]
    for name, result in results.items():
        assert "error" not in result, result
        # a base holds every key: at least the values' bytes
        assert result["base_bytes_median"] >= 50_000 * 100, name
        assert result["disk_bytes"] > 0 and result["memory_at_end"]["peak_rss"] > 0, name
