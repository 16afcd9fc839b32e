"""``python -m cjob_bench nexmark table`` end to end, at a tiny scale: every step runs and the
table is made of what they measured — never how fast anything is.

q1 only, both systems: one Kafka trial each at 400 events/s for 6 s (``--rates``: no search),
each in a process of its own with its own broker; then each system's CPU run over the same
4,000 events on files, every process counted from /proc, both outputs checked against the
oracle after the runs.
"""

from __future__ import annotations

import json
import pathlib

import pytest
from bench_runs import run_bench

pytestmark = [pytest.mark.s3, pytest.mark.timeout(600)]


def test_the_table_of_q1_is_made_of_both_systems_measurements(
    tmp_path: pathlib.Path, spark_kafka_libs: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CJOB_SPARK_KAFKA_LIBS", str(spark_kafka_libs))
    out, table = tmp_path / "table.json", tmp_path / "table.md"
    args = ["nexmark", "table", "--queries", "q1", "--rates", "400", "--seconds", "6"]
    args += ["--cpu-events", "4000", "--no-warm-up", "--work", str(tmp_path / "work")]
    args += ["--out", str(out), "--markdown", str(table)]
    done = run_bench(args, timeout=580)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(out.read_text())
    for system in ("ours", "spark"):
        search = doc["sustain"]["q1"][system]
        assert search["system"] == system and [t["rate"] for t in search["trials"]] == [400]
        [trial] = search["trials"]
        assert trial["verdict"]["checks"]["every_output_committed"] is True, trial["verdict"]
        run = doc["cpu"]["q1"][system]
        assert "error" not in run, run.get("error")
        assert run["correct"]["equal"] is True, run["correct"]
        assert run["correct"]["rows"] == run["events_read"] > 0  # q1: a row per bid read
        assert run["cpu_seconds"] > 0 and run["cpu_seconds_per_million_events"] > 0
    [row] = doc["rows"]
    assert row["equal"] is True
    assert row["ours_cpu_s_per_m"] == doc["cpu"]["q1"]["ours"]["cpu_seconds_per_million_events"]
    assert row["spark_cpu_s_per_m"] == doc["cpu"]["q1"]["spark"]["cpu_seconds_per_million_events"]
    lines = table.read_text().splitlines()
    assert lines[0].startswith("| query |") and lines[2].startswith("| q1 |"), lines
