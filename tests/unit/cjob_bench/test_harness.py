"""The harness every workload runs through, and the files its runners hand to Spark by path."""

from __future__ import annotations

import importlib
import pathlib

import pytest
from cjob_bench.harness import runs


def test_a_failed_run_is_kept_with_its_error_and_the_others_go_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def broken() -> dict[str, object]:
        raise OSError("disk full")

    failed = runs.attempt("W9 #0 ours", broken)
    ok = runs.attempt("W9 #0 spark", lambda: {"wall_seconds": 1.0, "correct": {"equal": True}})
    assert failed["error"] == "OSError('disk full')" and "disk full" in failed["traceback"]
    assert ok == {"wall_seconds": 1.0, "correct": {"equal": True}}
    err = capsys.readouterr().err
    assert "W9 #0 ours: FAILED" in err and "correct=True" in err


def test_every_system_takes_every_place_over_the_repeats() -> None:
    names = ["none", "aligned", "unaligned"]
    for order in (runs.interleaved, runs.rotated):
        firsts = {order(names, i)[0] for i in range(3)}
        lasts = {order(names, i)[-1] for i in range(3)}
        assert sorted(order(names, 1)) == sorted(names)
        assert {"none", "unaligned"} <= firsts and {"none", "unaligned"} <= lasts


@pytest.mark.parametrize(
    "module",
    [
        "cjob_bench.workloads.files_ours",
        "cjob_bench.workloads.w4",
        "cjob_bench.workloads.w5_ours",
        "cjob_bench.workloads.w4_kafka.ours",
        "cjob_bench.extras.recovery",
        "cjob_bench.extras.startup",
        "cjob_bench.extras.backpressure",
        "cjob_bench.extras.state_scale",
    ],
)
def test_the_pipeline_file_each_runner_submits_exists(module: str) -> None:
    assert pathlib.Path(importlib.import_module(module).PIPELINE).is_file()
