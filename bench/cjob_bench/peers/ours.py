"""Our runtime, the system under test: a pipeline file submitted to local Spark, as a user submits it.

Every workload runs ours the same way: its pipeline file (loaded by path by
the Spark driver and every worker, with the workload's arguments) through
``barrier_runtime.spark.driver`` on the benchmark's warm SparkSession
(``local[P]``), checkpoints in the embedded SeaweedFS S3 server's
:data:`BUCKET` under a prefix of its own per run. :func:`job_spec` builds that
job; each workload says its checkpoint settings (:func:`checkpoints`) and its
restart strategy (:func:`no_restarts` unless it measures recovery), and reads
what its pipeline's sink recorded. "Without periodic checkpoints" is an
interval of :data:`NO_CHECKPOINTS` seconds: the end-of-input checkpoint
remains, so the difference is the cost of the periodic ones.

>>> checkpoints(None).interval == NO_CHECKPOINTS, checkpoints(1.0, unaligned=True).unaligned
(True, True)
"""

from __future__ import annotations

from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.driver.restart import Backoff
from barrier_runtime.spark import config, driver, pipeline
from barrier_runtime.storage.embedded import EmbeddedS3Server

BUCKET = "cjob-bench"
NO_CHECKPOINTS = 1e9
"""The periodic interval of a run without periodic checkpoints (about 30 years)."""


def checkpoints(
    interval: float | None,
    *,
    unaligned: bool = False,
    timeout: float = 120.0,
    incremental: bool = False,
) -> CheckpointConfig:
    """Checkpoints every ``interval`` seconds (``None``: none but the end-of-input one)."""
    return CheckpointConfig(
        interval=NO_CHECKPOINTS if interval is None else interval,
        timeout=timeout,
        unaligned=unaligned,
        incremental=incremental,
    )


def no_restarts(backoff: Backoff) -> driver.RestartSettings:
    """A measured run that fails is reported, not restarted."""
    return driver.RestartSettings(max_restarts=0, window=600, backoff=backoff)


def job_spec(
    pipeline_file: str,
    args: list[str],
    *,
    s3: EmbeddedS3Server,
    prefix: str,
    parallelism: int,
    checkpoint: CheckpointConfig,
    restart: driver.RestartSettings,
) -> driver.SparkJobSpec:
    """The job of one run: ``pipeline_file`` with ``args``, its checkpoints under ``prefix``."""
    return driver.SparkJobSpec(
        pipeline=pipeline.PipelineRef.parse(pipeline_file, args),
        parallelism=parallelism,
        store=config.StoreRef(s3.url(BUCKET, ""), prefix),
        checkpoint=checkpoint,
        restart=restart,
    )
