"""Exactly-once on real Spark (local mode, 3 worker processes) with a real S3 server.

The job is the keyed running count (``barrier_runtime.demo``) with per-key
sequence numbers and the exactly-once file sink, checkpoints and output both
in the SeaweedFS bucket. One SparkSession (``conftest.py``) serves the in-process
tests (Spark starts slowly); the driver-restart test runs ``cjob run`` as
subprocesses. The helpers are shared with the other Spark tests
(``spark_harness.py``).

* crash-free: the reference output, which must also equal the analytic one;
* worker processes SIGKILLed five times at random moments (after the attempt's
  workers said hello: during restore, rendezvous, processing or snapshots);
* the driver process SIGKILLed once mid-run, then ``cjob run`` again.

(Stopping with a savepoint and resuming it, through the control API of ``cjob
run`` and ``cjob driver``, is in ``test_spark_control_api.py``; the same faults
with a NATS JetStream source in ``test_spark_nats.py``.)

Each must publish exactly the crash-free output: lost = duplicated =
out-of-order = 0.
"""

from __future__ import annotations

import pytest
from barrier_runtime_testing import spark_harness as h

from barrier_runtime.core import layout
from barrier_runtime.spark import driver
from barrier_runtime.storage import id_mark, object_store, s3
from barrier_runtime.testing import check_exactly_once

pytestmark = [pytest.mark.s3, pytest.mark.slow]

PIPELINE, P = h.GENERATOR_PIPELINE, h.P
KEYS, EVENTS_PER_KEY = h.KEYS, h.EVENTS_PER_KEY


def _spec(out_url, store_url, *, rate=None):
    return h.job_spec(PIPELINE, h.generator_args(out_url, rate), store_url, "default/running-count")


def test_crash_free_run_publishes_every_count_once(crash_free) -> None:
    expected = [
        {"key": f"k{k}", "seq": s, "count": s + 1}
        for k in range(KEYS)
        for s in range(EVENTS_PER_KEY)
    ]
    report = check_exactly_once(expected, crash_free)
    assert report.exactly_once and report.actual == KEYS * EVENTS_PER_KEY


def test_worker_processes_killed_five_times(spark, s3_env, crash_free) -> None:
    out_url, store_url = h.s3_urls(s3_env)
    job = driver.SparkDriver(_spec(out_url, store_url, rate=800), session=spark)
    h.run_with_worker_kills(job, kills=5)
    h.assert_exactly_once(crash_free, out_url)
    only_committed_checkpoints_left(store_url, "default/running-count")


def only_committed_checkpoints_left(store_url: str, job: str) -> None:
    """Nothing of a failed or aborted checkpoint is left once the job has ended (issue 27):
    every checkpoint directory has its ``_metadata``, no multipart upload is incomplete."""
    store = object_store.open_object_store(store_url)
    assert isinstance(store, s3.S3ObjectStore)
    keys = [k[len(job) + 1 :] for k in store.list(f"{job}/checkpoints/")]
    members = [m for m in map(layout.parse_member, keys) if m is not None]
    dirs = {ref for ref, _ in members}
    uncommitted = sorted(str(ref) for ref in dirs if ref.metadata_key not in keys)
    assert dirs and uncommitted == [], uncommitted
    # beside the directories, only the id mark (the clean-up took the highest id away)
    assert {k for k in keys if layout.parse_member(k) is None} <= {id_mark.NAME}
    root = f"{store.prefix}/{job}/"
    uploads = store._client._list_multipart_uploads(store.bucket, prefix=root).uploads
    assert [u.object_name for u in uploads] == []


def test_driver_killed_and_restarted(s3_env, crash_free, tmp_path) -> None:
    out_url, store_url = h.s3_urls(s3_env)
    command = [
        *h.CLI,
        "run",
        "--json",
        "-p",
        str(P),
        "--checkpoint-interval",
        "0.3",
        "--store",
        store_url,
        "--job",
        "default/driver-restart",
        "--restart-backoff",
        "0.2",
        PIPELINE,
        "--",
        *h.generator_args(out_url, rate=600),
    ]
    h.kill_driver_and_run_again(command, tmp_path, out_url, total=KEYS * EVENTS_PER_KEY)
    h.assert_exactly_once(crash_free, out_url)
