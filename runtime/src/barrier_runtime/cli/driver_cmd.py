"""``cjob driver --config job.json [--restore-from ID|PATH]``: the entry point of the driver pod.

It reads the job configuration the operator wrote (see
:mod:`barrier_runtime.spark.job_config`), serves the control API on the
configured port with the bearer token from the named environment variable,
and runs the job on Spark until its input ends (exit 0), it is stopped with a
savepoint through ``POST /v1/stop`` or by SIGTERM (exit 0: the pod is deleted,
evicted or drained; the savepoint must complete within
``driver.terminationGracePeriodSeconds``, see
:mod:`barrier_runtime.driver.graceful_stop`), or its restart budget is spent
(exit 1 with a one-line reason; the operator then restarts the pod from the
latest completed checkpoint). Logs are JSON-free, quiet lines on stderr.

Before Spark starts, :mod:`~barrier_runtime.cli.preflight` checks the
configuration's values (naming the job.json field), the store and the
checkpoint to restore: a mistake there is one sentence and exit code 2.
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import Any

from barrier_runtime import job_document
from barrier_runtime.cli import preflight
from barrier_runtime.driver import graceful_stop, job_driver
from barrier_runtime.spark import driver as driver_mod
from barrier_runtime.spark import job_config, pipeline

log = logging.getLogger("barrier_runtime.driver")

MASTER_ENV = "CJOB_SPARK_MASTER"


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("driver", help="run a job from the operator's job configuration")
    parser.add_argument(
        "--config", required=True, metavar="FILE", help="path of job.json (written by the operator)"
    )
    parser.add_argument(
        "--restore-from",
        metavar="ID|PATH",
        help="start from this checkpoint or savepoint (an id such as 42, or its "
        "path) instead of the latest completed one",
    )
    parser.add_argument(
        "--master", metavar="URL", help=f"override sparkConf spark.master (or set ${MASTER_ENV})"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    raw = job_config.read(args.config)
    preflight.driver_document(job_document.JobDocument.from_storage(raw))
    restore = args.restore_from
    if restore is not None:
        preflight.restore_reference(restore)
    spec = job_config.to_spec(
        raw,
        environ=os.environ,
        restore_from=int(restore) if restore and restore.isdigit() else restore,
        master=args.master or os.environ.get(MASTER_ENV) or None,
    )
    flow = pipeline.load_flow(spec.pipeline)
    expected = job_config.max_parallelism(raw)
    if expected is not None and expected != flow.max_parallelism:
        raise job_config.JobConfigError(
            f"maxParallelism is {expected} in the job but {flow.max_parallelism} in the pipeline "
            f"{spec.pipeline.describe()}: make them equal (it fixes the key groups of the state)"
        )
    target = preflight.job(spec, flow, preflight.DRIVER)
    driver = driver_mod.SparkDriver(spec, flow=flow, store=target.store, restore=target.restore)
    log.warning(
        "driver for %s: P=%d, store %s, coordinator %s, restore %s",
        flow.name,
        spec.parallelism,
        driver.store.describe(),
        driver.server.address,
        restore or "latest completed checkpoint",
    )
    stopper = graceful_stop.GracefulStop(driver.job, spec.stop_grace_period)
    with graceful_stop.on_signals(stopper):
        result = driver.run()
    log.warning(
        "job %s: restored from %s, %d checkpoint(s), %d restart(s), final checkpoint %s, "
        "savepoint %s (id %s)",
        _status(result, stopper),
        result.restored_from[0] if result.restored_from else None,
        len(result.completed_checkpoints),
        result.restarts,
        result.final_checkpoint,
        result.stopped_with_savepoint,
        result.stopped_savepoint_id,
    )
    return 0


def _status(result: job_driver.JobResult, stopper: graceful_stop.GracefulStop) -> str:
    if result.stopped_with_savepoint is None:
        return "finished"
    return f"stopped by {stopper.signal_name}" if stopper.signal_name else "stopped"
