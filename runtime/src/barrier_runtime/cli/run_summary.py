"""What ``cjob run`` prints when the job ends: a sentence, or one JSON ``summary`` event."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from barrier_runtime.cli import progress
from barrier_runtime.core import types
from barrier_runtime.driver import job_driver
from barrier_runtime.spark import driver as driver_mod


def rejected_text(rejected: Mapping[str, int]) -> str:
    """``; rejected: parse 3, lines 2`` (skipped or dead-lettered, per step), or nothing."""
    shown = ", ".join(f"{step} {n:,}" for step, n in sorted(rejected.items()) if n)
    return f"; records rejected (skipped or dead-lettered): {shown}" if shown else ""


def summary(
    out: progress.Output,
    driver: driver_mod.SparkDriver,
    result: job_driver.JobResult,
    stopped_by: str | None = None,
) -> None:
    metrics = driver.job.runtime_metrics()
    status = "stopped" if result.stopped_with_savepoint else "finished"
    fields = {
        "status": status,
        **counts(result),
        "final_checkpoint": result.final_checkpoint,
        "savepoint": result.stopped_with_savepoint,
        "savepoint_id": result.stopped_savepoint_id,
        "stopped_by": stopped_by,
        "records_rejected": dict(metrics.records_rejected),
        "wall_time_s": round(out.elapsed, 2),
    }
    if out.json_lines:
        print(json.dumps({"event": "summary", **fields}, default=str), flush=True)
        return
    out.say(
        f"job {status}: {len(result.completed_checkpoints)} checkpoint(s) completed, "
        f"{result.restarts} restart(s), "
        + ending_text(result, stopped_by)
        + published_text(result.records_published)
        + rejected_text(metrics.records_rejected)
        + startup_text(result.startup_seconds)
    )


def ending_text(result: job_driver.JobResult, stopped_by: str | None) -> str:
    """The checkpoint the run ended with: the savepoint it was stopped with, or the final one.

    >>> done = job_driver.JobResult(final_checkpoint=9)
    >>> ending_text(done, None)
    'final checkpoint 9'
    >>> stopped = job_driver.JobResult(stopped_with_savepoint="sp-12", stopped_savepoint_id=12)
    >>> ending_text(stopped, "SIGINT")
    'savepoint 12 at sp-12 (stopped by SIGINT; the next run resumes from it)'
    """
    if result.stopped_with_savepoint is None:
        return f"final checkpoint {result.final_checkpoint}"
    by = f"stopped by {stopped_by}; " if stopped_by else ""
    return (
        f"savepoint {result.stopped_savepoint_id} at {result.stopped_with_savepoint} "
        f"({by}the next run resumes from it)"
    )


def published_text(published: Mapping[types.StepId, int]) -> str:
    """``; published: out 1,200`` (records committed per sink step, over all runs), or nothing."""
    shown = ", ".join(f"{step} {n:,}" for step, n in sorted(published.items()))
    return f"; records published: {shown}" if shown else ""


def startup_text(seconds: list[float]) -> str:
    """``; start-up 1.4s`` (per attempt: from its start to every worker running), or nothing.

    >>> startup_text([1.42, 0.61])
    '; start-up 1.4s, 0.6s after restarts'
    """
    if not seconds:
        return ""
    restarts = ", ".join(f"{s:.1f}s" for s in seconds[1:])
    return f"; start-up {seconds[0]:.1f}s" + (f", {restarts} after restarts" if restarts else "")


def counts(result: job_driver.JobResult) -> dict[str, Any]:
    return {
        "attempts": result.attempts,
        "restarts": result.restarts,
        "checkpoints_completed": len(result.completed_checkpoints),
        "restored_from": result.restored_from,
        "failures": result.failures,
        "records_out": dict(result.records_published),
        "startup_s": [round(s, 2) for s in result.startup_seconds],
    }
