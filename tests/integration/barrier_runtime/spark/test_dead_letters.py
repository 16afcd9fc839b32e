"""Dead letters exactly once: 1 % bad records, crashes and worker kills.

The dataflow (``dead_letter_pipeline.py``) reads JSON lines with
``on_error="dead-letter"`` and parses a field in a step with the same policy.
Every good record must reach the sink exactly once and in order per key, and
every bad one — a malformed line (with its file and line) or a record the step
raised on (with the error) — the dead-letter sink exactly once; the checker
counts lost, duplicated and out-of-order for both. First in process with
crashes at every point of the checkpoint life cycle, then on local Spark with
worker processes SIGKILLed.
"""

from __future__ import annotations

import collections
import pathlib

import pytest
from barrier_runtime_testing import spark_harness as h

from barrier_runtime.connectors.files import FileSink
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.spark import driver
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import (
    Crash,
    FaultInjector,
    FaultPoint,
    LocalExecutor,
    check_exactly_once,
)

pipeline = h.load_pipeline("dead_letter_pipeline")
PIPELINE = str(pathlib.Path(pipeline.__file__))


def _check(expected_good, expected_bad, out_url: str, dead_url: str) -> None:
    report = check_exactly_once(expected_good, FileSink(out_url).read_committed())
    print("good records:", report.as_dict())
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0), report
    got = collections.Counter(pipeline.dead_letter_identities(FileSink(dead_url).read_committed()))
    want = collections.Counter(expected_bad)
    lost, duplicated = sum((want - got).values()), sum((got - want).values())
    print(f"dead letters: expected {sum(want.values())}, lost {lost}, duplicated {duplicated}")
    assert (lost, duplicated) == (0, 0), (want - got, got - want)
    for url in (out_url, dead_url):
        assert not list(FileSink(url).store.list("_staging/")), "staged data left behind"


def test_in_process_with_crashes_at_every_life_cycle_point(tmp_path) -> None:
    good, bad = pipeline.write_input(tmp_path / "in")
    assert len(bad) == 100 and len(good) == 9_900  # 1 % of 10 000
    out, dead = f"file://{tmp_path}/out", f"file://{tmp_path}/dead"
    flow = pipeline.build_flow(
        ["--input", str(tmp_path / "in"), "--out", out, "--dead-letters", dead, "--pace", "0.03"]
    )
    P = FaultPoint
    injector = FaultInjector(
        [
            Crash(P.PROCESSING, subtask=0, after_records=1_000),
            Crash(P.SNAPSHOT, task="count", checkpoint_id=3),
            Crash(P.UPLOAD, checkpoint_id=5),
            Crash(P.RESTORE, attempt=3),
            Crash(P.COMMIT, checkpoint_id=7),
        ]
    )
    store = CheckpointStore(open_object_store(str(tmp_path / "cp")), "default/dead-letters")
    executor = LocalExecutor(
        flow,
        parallelism=2,
        store=store,
        config=CheckpointConfig(interval=0.05),
        fault_injector=injector,
    )
    result = executor.run()
    assert len(injector.fired) == 5, injector.fired
    assert result.restarts == 5
    _check(good, bad, out, dead)
    # Counted in the metrics (cumulative over attempts: a replayed rejection counts again).
    # Every bad record is rejected at least once: 52 malformed lines, 48 bad amounts.
    rejected = executor.runtime_metrics().records_rejected
    per_step = collections.Counter(step for step, _, _ in bad)
    assert per_step == {"lines": 52, "parse-amount": 48}
    assert all(rejected[step] >= n for step, n in per_step.items()), (rejected, per_step)


@pytest.mark.slow
def test_on_spark_with_worker_kills(spark, s3_env, tmp_path) -> None:
    good, bad = pipeline.write_input(tmp_path / "in")
    out_url, store_url = h.s3_urls(s3_env)
    dead_url = out_url.replace("/out", "/dead-letters")
    spec = h.job_spec(
        PIPELINE,
        [
            "--input",
            str(tmp_path / "in"),
            "--out",
            out_url,
            "--dead-letters",
            dead_url,
            "--pace",
            "0.4",
        ],
        store_url,
        "default/dead-letters",
    )
    h.run_with_worker_kills(driver.SparkDriver(spec, session=spark), kills=3)
    _check(good, bad, out_url, dead_url)
