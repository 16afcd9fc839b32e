"""Back-pressure on real Spark (local mode, 3 worker processes) with unaligned checkpoints in S3.

The acceptance criterion: with a sink throttled to 1/10 of the source rate,
the resident memory of every worker stays bounded and unaligned checkpoints
still complete. The workload (:mod:`cjob_bench.probe`, in ``bench/``): the keyed
running count, the source paced at R = 12 000 events/s, a 4 KiB payload on
every event until the count, the sink side paced at exactly R/10; 36 000
events, so the run lasts ~30 s while the source alone would be done in 3 s.
One run (module fixture) is sampled every 0.25 s — each worker's VmRSS and
the job's record counters — and the tests check what it shows:

* the source is held back, not buffered: it emits at the sink's pace, spends
  most of its time waiting for channel credit, and never more records are
  between source and sink than the channels can hold;
* each worker's RSS grows above its baseline by less than
  :func:`~cjob_bench.probe.in_flight_bound` (channels · capacity ·
  batch size · record size, channel state, read buffers, sink staging,
  allocator slack), and is flat in the second half of the run;
* periodic unaligned checkpoints complete and persist channel state;
* the committed output is exactly the analytic running count.

The figures are printed; ``python -m cjob_bench run backpressure`` reports the same ones.
The SparkSession and the S3 credentials come from ``conftest.py``.
"""

from __future__ import annotations

import json
import pathlib
import time
import uuid

import pytest
from cjob_bench import probe

from barrier_runtime.connectors.files import FileSink
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.spark import config, driver, pipeline
from barrier_runtime.testing import check_exactly_once

pytestmark = [pytest.mark.s3, pytest.mark.slow, pytest.mark.timeout(480)]

PIPELINE = str(pathlib.Path(__file__).with_name("throttled_count_pipeline.py"))
BUCKET = "cjob-tests"
JOB = probe.ThrottledJob()
CAPACITY = 8
INTERVAL = 1.0
WARMUP = 3.0
FLAT = 8 * probe.MiB
"""How much a worker's peak may rise from the first to the second half of the steady phase.

Half the allocator slack the bound allows: the 4 KiB payloads are allocated by
glibc's malloc, whose per-thread arenas (receivers, the uploader, the task
thread) give pages back in steps that depend on thread timing. Locally the rise
is -0.7 to 1.9 MiB; one CI run, in a worker that started 33 MiB larger, saw
4.9 MiB against the former 4 MiB. Keeping every payload (a worker reads about
6,000 in the second half) would add 24 MiB.
"""


@pytest.fixture(scope="module")
def measured(spark, s3_env):
    run_id = uuid.uuid4().hex[:8]
    out_url = s3_env.url(BUCKET, f"{run_id}/out")
    spec = driver.SparkJobSpec(
        pipeline=pipeline.PipelineRef.parse(PIPELINE, JOB.pipeline_args(out_url)),
        parallelism=JOB.parallelism,
        store=config.StoreRef(s3_env.url(BUCKET, f"{run_id}/cp"), "default/backpressure"),
        checkpoint=CheckpointConfig(interval=INTERVAL, unaligned=True, retained=1000),
        channel_capacity=CAPACITY,
    )
    started = time.monotonic()
    run = probe.JobProbe(driver.SparkDriver(spec, session=spark)).run()
    bound = probe.in_flight_bound(JOB, CAPACITY, INTERVAL)
    figures = probe.summarise(run, JOB, bound, CAPACITY, WARMUP)
    print(f"run took {time.monotonic() - started:.1f}s:", json.dumps(figures, indent=1))
    assert run.result.restarts == 0, run.result.failures
    return run, figures, bound, out_url


def test_the_throttled_sink_holds_the_source_back(measured) -> None:
    _, figures, _, _ = measured
    rates = figures["rates"]
    assert rates["source_measured"] <= 1.1 * JOB.sink_rate, rates
    assert rates["source_measured"] <= JOB.source_rate / 5, rates
    assert rates["source_backpressured_fraction"] >= 0.5, rates
    # Nothing buffers records outside the channels (metrics arrive every 0.5 s per worker).
    between = figures["records_between_source_and_sink"]
    assert between["max"] <= between["bound"] + JOB.sink_rate * 1.0, between


def test_every_worker_rss_stays_within_the_configured_bound(measured) -> None:
    _, figures, bound, _ = measured
    assert bound.total < JOB.total_events * bound.record_bytes / JOB.parallelism / 2, (
        "the bound must be far below what buffering the whole input would take"
    )
    assert len(figures["workers"]) == JOB.parallelism
    for worker in figures["workers"]:
        assert worker["growth_mib"] * probe.MiB <= bound.total, (worker, bound.as_dict())
        assert worker["growth_second_half_mib"] * probe.MiB <= FLAT, worker


def test_unaligned_checkpoints_complete_with_channel_state(measured) -> None:
    _, figures, _, _ = measured
    checkpoints = figures["checkpoints"]
    assert checkpoints["completed"] >= 10, checkpoints
    assert checkpoints["failed_in_the_whole_run"] == 0, checkpoints
    assert checkpoints["with_channel_state"] >= checkpoints["completed"] // 2, checkpoints
    assert checkpoints["channel_state_bytes_max"] > 0, checkpoints


def test_the_output_is_the_exact_running_count(measured) -> None:
    _, _, _, out_url = measured
    report = check_exactly_once(JOB.expected_output(), list(FileSink(out_url).read_committed()))
    print("exactly-once check:", report.as_dict())
    assert (report.lost, report.duplicated, report.out_of_order) == (0, 0, 0), report
    assert report.actual == JOB.total_events
