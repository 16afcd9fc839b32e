"""The benchmark suite's parts without Spark: its data, its pipelines' answers, Bytewax's answers.

A benchmark whose systems compute different things measures nothing: every
workload's output here must equal the exact per-key answer of the data set.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pyarrow.parquet as pq
import pytest
from cjob_bench.harness import answers, report, simultaneous
from cjob_bench.peers import bytewax as bytewax_peer
from cjob_bench.workloads import FILE_WORKLOADS, data
from cjob_bench.workloads import files_pipeline as pipeline

from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import LocalExecutor

KEYS = 50


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> data.DataSet:
    return data.generate(tmp_path_factory.mktemp("suite"), events=6000, keys=KEYS, files=3, seed=7)


def test_parquet_and_json_lines_hold_the_same_events(dataset: data.DataSet) -> None:
    for name in ("part-00000", "part-00002"):
        table = pq.read_table(dataset.parquet / f"{name}.parquet")
        lines = (dataset.jsonl / f"{name}.jsonl").read_text().splitlines()
        assert [json.loads(line) for line in lines] == table.to_pylist()
    assert int(dataset.counts.sum()) == 6000
    assert 0 < int(dataset.buy_counts.sum()) < 6000


def test_replicated_files_multiply_the_answers(
    dataset: data.DataSet, tmp_path: pathlib.Path
) -> None:
    big = dataset.replicated(tmp_path, 3)
    assert len(list(big.parquet.iterdir())) == 9 and big.events == 18_000
    assert np.array_equal(big.sums, dataset.sums * 3)


@pytest.mark.parametrize("workload", ["W1", "W2", "W3", "W3v"])
def test_our_pipelines_compute_the_exact_answer(
    workload: str, dataset: data.DataSet, tmp_path: pathlib.Path
) -> None:
    source = dataset.jsonl if FILE_WORKLOADS[workload].json_lines else dataset.parquet
    out = tmp_path / "out"
    args = ["--workload", workload, "--input", str(source), "--output", str(out)]
    flow = pipeline.build_flow([*args, "--keys", str(KEYS), "--batch-size", "500"])
    store = CheckpointStore(open_object_store(str(tmp_path / "cp")), "suite")
    LocalExecutor(flow, parallelism=2, store=store, config=CheckpointConfig(interval=0.05)).run()
    if FILE_WORKLOADS[workload].json_lines:
        got = answers.from_jsonl_files(out, KEYS, value="count")
    else:
        got = answers.empty(KEYS)
        for path in out.glob("*.json"):
            body = json.loads(path.read_text())
            answers.merge_max(got, body["keys"], body["values"])
    assert answers.check(got, dataset.expected(workload))["equal"]
    assert not answers.check(got + 1, dataset.expected(workload))["equal"]


@pytest.mark.parametrize("workload", ["W2", "W3"])
def test_bytewax_computes_the_exact_answer_with_recovery_on(
    workload: str, dataset: data.DataSet, tmp_path: pathlib.Path
) -> None:
    run = bytewax_peer.run(workload, dataset, tmp_path, processes=2, batch_size=700)
    assert run["correct"]["equal"], run
    assert any((tmp_path).rglob("recovery/*.sqlite3")), "recovery partitions were created"


def test_report_medians_ratios_and_overhead() -> None:
    def runs(*eps: int) -> list[dict[str, object]]:
        return [
            {"events_per_second": e, "wall_seconds": 1.0, "correct": {"equal": True}} for e in eps
        ]

    systems = {
        "ours/checkpoints_1s": report.summarize(runs(90, 100, 95)),
        "ours/no_periodic_checkpoints": report.summarize(runs(100, 99, 101)),
        "spark_ss/stream": report.summarize([*runs(50), {"error": "boom"}]),
    }
    assert (
        report.overhead(systems["ours/checkpoints_1s"], systems["ours/no_periodic_checkpoints"])
        == 0.05
    )
    assert report.ratios(systems)["ours_over_spark_ss_stream"] == 1.9
    assert systems["spark_ss/stream"]["failed_runs"] == 1
    assert "checkpoint overhead" in report.table(
        {"W1": {"systems": systems, "checkpoint_overhead": 0.05}}
    )


def test_long_runs_report_the_overhead_of_each_back_to_back_repeat() -> None:
    with_cp = [{"events_per_second": e} for e in (97, 90, 99)]
    without = [{"events_per_second": e} for e in (100, 100, 90)]
    without[1] = {"error": "boom"}
    assert report.paired_overheads(with_cp, without) == [0.03, -0.1]
    line = report.table(
        {
            "W1-long": {
                "checkpoint_overhead_per_repeat": [0.03, -0.1],
                "checkpoint_overhead_median_of_repeats": -0.035,
            }
        }
    )
    assert "per repeat: 3.0%, -10.0%; median -3.5%" in line


@pytest.mark.parametrize("workload", ["W1", "W2"])
def test_the_sink_timeline_counts_every_write_in_time_order(
    workload: str, dataset: data.DataSet, tmp_path: pathlib.Path
) -> None:
    out = tmp_path / "out"
    args = ["--workload", workload, "--input", str(dataset.parquet), "--output", str(out)]
    flow = pipeline.build_flow([*args, "--keys", str(KEYS), "--batch-size", "500", "--timeline"])
    store = CheckpointStore(open_object_store(str(tmp_path / "cp")), "suite")
    LocalExecutor(flow, parallelism=2, store=store, config=CheckpointConfig(interval=0.05)).run()
    bodies = [json.loads(path.read_text()) for path in out.glob("*.json")]
    for body in bodies:
        times = [t for t, _ in body["timeline"]]
        assert times == sorted(times)
        assert sum(n for _, n in body["timeline"]) == body["records"]
    assert sum(body["records"] for body in bodies) > 0


def test_simultaneous_runs_compare_over_the_window_both_were_writing() -> None:
    with_cp = [(100.0 + i, 90) for i in range(30)]  # 90 records/s, 100 .. 129 s
    without = [(105.0 + i, 100) for i in range(40)]  # 100 records/s, 105 .. 144 s
    result = simultaneous.compare(with_cp, without, margin=2.0)
    assert result["window_seconds"] == 20.0  # 107 .. 127
    assert result["records_per_second_with_checkpoints"] == 90
    assert result["records_per_second_without"] == 100
    assert result["overhead"] == pytest.approx(0.1)
    with pytest.raises(ValueError, match="at the same time"):
        simultaneous.compare(with_cp, [(140.0 + i, 100) for i in range(10)])
    with pytest.raises(ValueError, match="wrote nothing"):
        simultaneous.compare(with_cp, [])
