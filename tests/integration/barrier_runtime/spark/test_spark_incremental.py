"""Incremental checkpoints on real Spark (issue 32): worker kills, rescaling, a corrupt object.

The keyed running count with the exactly-once file sink, checkpoints and output in the
SeaweedFS bucket, as in ``test_spark_local_mode.py``, but every checkpoint incremental:

* worker processes SIGKILLed five times: every restore reads a base and its deltas from
  ``shared/``;
* rescaling: stopped (no restart budget) at P = 2, restored at P = 3, stopped again,
  restored at P = 1 to the end — each time from an incremental checkpoint, whose chains
  were written at another parallelism;
* before the last restore, the newest checkpoint's own delta is damaged: the restore
  skips that checkpoint (it cannot be verified) and resumes from the one before. Nothing
  is lost; what the skipped checkpoint had already published (its sinks may have
  committed some of it before the job stopped) comes once more, and nothing else does.

The output is checked against the crash-free one: lost, duplicated, out-of-order.
"""

from __future__ import annotations

import dataclasses

import pytest
from barrier_runtime_testing import spark_harness as h

from barrier_runtime.core import faults
from barrier_runtime.core.types import CheckpointConfig, StateBackend, StateBackendKind
from barrier_runtime.spark import driver
from barrier_runtime.storage import checkpoint_store, object_store
from barrier_runtime.testing import JobFailedError, check_exactly_once

pytestmark = [pytest.mark.s3, pytest.mark.slow]

PIPELINE, JOB = h.GENERATOR_PIPELINE, "default/incremental"


def _spec(
    out_url: str,
    store_url: str,
    parallelism: int,
    retained: int = 3,
    backend: StateBackendKind = StateBackendKind.MEMORY,
    **changes,
) -> driver.SparkJobSpec:
    spec = h.job_spec(PIPELINE, h.generator_args(out_url, 800), store_url, JOB)
    checkpoint = CheckpointConfig(
        interval=0.3, retained=retained, incremental=True, state_backend=StateBackend(backend)
    )
    return dataclasses.replace(spec, parallelism=parallelism, checkpoint=checkpoint, **changes)


def _store(store_url: str) -> checkpoint_store.CheckpointStore:
    return checkpoint_store.CheckpointStore(object_store.open_object_store(store_url), JOB)


def _stop_after(checkpoint_id: int) -> dict:
    """A crash at that checkpoint's snapshot with no restart budget: the job stops there."""
    crash = faults.Crash(faults.FaultPoint.SNAPSHOT, checkpoint_id=checkpoint_id)
    return {"crashes": (crash,), "restart": driver.RestartSettings(max_restarts=0, window=600)}


def test_worker_processes_killed_five_times(spark, s3_env, crash_free) -> None:
    out_url, store_url = h.s3_urls(s3_env)
    # every checkpoint kept, so that the restored ones can be read afterwards
    job = driver.SparkDriver(_spec(out_url, store_url, h.P, retained=1000), session=spark)
    result = h.run_with_worker_kills(job, kills=5)
    h.assert_exactly_once(crash_free, out_url)
    restored = [cid for cid in result.restored_from if cid is not None]
    assert restored, "the kills came after the first checkpoint"
    chains = [_store(store_url).load(cid).state_handles for cid in restored]
    assert any(h.delta for handles in chains for h in handles), "restored through deltas"


@pytest.mark.parametrize("backend", list(StateBackendKind), ids=lambda k: k.value)
def test_rescaled_from_2_to_3_to_1_and_past_a_corrupt_delta(
    spark, s3_env, crash_free, backend: StateBackendKind
) -> None:
    """With the state in memory and on disk (the same checkpoints either way)."""
    out_url, store_url = h.s3_urls(s3_env)
    store = _store(store_url)
    first = driver.SparkDriver(
        _spec(out_url, store_url, 2, backend=backend, **_stop_after(6)), session=spark
    )
    with pytest.raises(JobFailedError):
        first.run()
    at_2 = store.select_restore_point()
    assert at_2 is not None and at_2.fingerprint.parallelism == 2
    assert any(h.delta for h in at_2.state_handles)

    second = _spec(out_url, store_url, 3, backend=backend, restore_from=at_2.checkpoint_id)
    second = dataclasses.replace(second, **_stop_after(at_2.checkpoint_id + 6))
    with pytest.raises(JobFailedError):
        driver.SparkDriver(second, session=spark).run()
    at_3 = store.select_restore_point()
    assert at_3 is not None and at_3.fingerprint.parallelism == 3
    assert any(h.delta for h in at_3.state_handles)

    own = [h for h in at_3.state_handles if h.delta and h.as_of == at_3.checkpoint_id]
    damaged = own[0]
    data = store.object_store.get(f"{JOB}/{damaged.key}")
    store.object_store.put(f"{JOB}/{damaged.key}", bytes([data[0] ^ 0xFF]) + data[1:])
    fallback = store.select_restore_point()
    assert fallback is not None and fallback.checkpoint_id < at_3.checkpoint_id
    skipped = at_3.records_published["out"] - fallback.records_published["out"]

    result = driver.SparkDriver(_spec(out_url, store_url, 1, backend=backend), session=spark).run()
    assert result.restored_from[0] == fallback.checkpoint_id
    report = check_exactly_once(crash_free, h.published(out_url))
    print("after the fallback:", report.as_dict(), "skipped:", skipped)
    # A record of the skipped checkpoint comes once more and repeats its key's sequence
    # number (out of order too); nothing else is duplicated, nothing is lost.
    assert report.lost == 0 and report.duplicated == report.out_of_order <= skipped, report
