"""Benchmark: incremental against full checkpoints of a large keyed state (issue 32).

    PYTHONPATH=runtime/src:bench .venv/bin/python -m cjob_bench run state-scale \\
        [--keys 10000000] [--rate 100000] [--seconds 60]

The job (:mod:`.state_scale_pipeline`) loads ``--keys`` keys of ``--value-bytes`` each
(``stateful_map`` keeping the latest value), then updates ``--rate`` of them per second
(1 % of 10 M by default) for ``--seconds``, at P = 2 on one warm ``local[2]`` SparkSession,
with aligned checkpoints every ``--interval`` s to the embedded S3 server. The method,
fixed before measuring:

* the same input runs with full checkpoints and with incremental ones, in that order
  and then again in the other order (``--repeats`` pairs, ABBA);
* per run, every completed checkpoint whose sources had finished the load (read off its
  ``_metadata``: every partition's position past its share of the keys) is a *steady*
  checkpoint; per run the median and p90 of their duration (trigger to commit), their
  state size (what a restore reads) and the bytes written for them;
* restore: one more run per mode (full, incremental, incremental with local recovery)
  crashes subtask 0 of the keyed step halfway through the updates; the restarted
  attempt's start-up (submitting the stage until every subtask has restored and runs)
  against the first attempt's, which restored nothing; and before it, the driver's choice
  of the restore point, which reads and verifies every object of it
  (``restore_point_seconds``).

The goals (issue 32): incremental checkpoints >= 20x smaller and >= 10x faster than full
ones, medians over the steady checkpoints of all runs. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

from barrier_runtime.core import faults, layout
from barrier_runtime.core import metadata as md
from barrier_runtime.core.types import CheckpointConfig, StepId
from barrier_runtime.driver.restart import Backoff
from barrier_runtime.spark import driver
from barrier_runtime.storage import checkpoint_store, object_store
from cjob_bench.extras import state_scale_windows as windows
from cjob_bench.harness import machine
from cjob_bench.harness import runs as harness
from cjob_bench.peers import ours

PIPELINE = str(pathlib.Path(__file__).with_name("state_scale_pipeline.py"))
P = 2
log = harness.logger("state-scale")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=10_000_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--rate", type=float, default=100_000.0, help="updates per second")
    parser.add_argument("--seconds", type=float, default=60.0, help="of updates")
    parser.add_argument("--interval", type=float, default=1.0, help="checkpoint interval (s)")
    parser.add_argument("--repeats", type=int, default=1, help="ABBA pairs of runs")
    parser.add_argument("--skip-restore", action="store_true")
    parser.add_argument(
        "--skip-state", action="store_true", help="only the window job (and restores if asked)"
    )
    windows.add_arguments(parser)
    parser.add_argument("--output", type=pathlib.Path, default=None)
    return parser.parse_args(argv)


def _pipeline_args(a: argparse.Namespace) -> list[str]:
    return [
        *("--keys", str(a.keys), "--value-bytes", str(a.value_bytes)),
        *("--rate", str(a.rate), "--seconds", str(a.seconds), "--partitions", str(P)),
    ]


def run_once(
    a: argparse.Namespace,
    spark: Any,
    s3: Any,
    label: str,
    incremental: bool,
    crash: bool,
    local_recovery: bool = False,
) -> dict[str, Any]:
    """One run of the job; its steady checkpoints and attempts, from its store."""
    prefix = f"state-scale/{label}-{int(time.time() * 1000)}"
    restarts = driver.RestartSettings(
        max_restarts=1 if crash else 0, window=3600, backoff=Backoff(initial=0.1, max=1.0)
    )
    halfway = a.keys // P + int(a.rate / P * a.seconds / 2)
    crashes = (
        (
            faults.Crash(
                faults.FaultPoint.PROCESSING, task="latest", subtask=0, after_records=halfway
            ),
        )
        if crash
        else ()
    )
    spec = ours.job_spec(
        PIPELINE,
        _pipeline_args(a),
        s3=s3,
        prefix=prefix,
        parallelism=P,
        checkpoint=CheckpointConfig(
            interval=a.interval,
            timeout=600,
            retained=100_000,
            incremental=incremental,
            local_recovery=local_recovery,
        ),
        restart=restarts,
    )
    spec = dataclasses.replace(spec, crashes=crashes)
    log(
        f"{label}: {'incremental' if incremental else 'full'} checkpoints{', crash' if crash else ''}"
    )
    started, started_wall = time.monotonic(), time.time()
    result = driver.SparkDriver(spec, session=spark).run()
    wall = time.monotonic() - started
    store = checkpoint_store.CheckpointStore(
        object_store.open_object_store(s3.url(ours.BUCKET, "")), prefix
    )
    completed = [
        m for m in store.list_completed() if m.checkpoint_id in result.completed_checkpoints
    ]
    steady = [m for m in completed if _loaded(m, a)]
    out = {
        "label": label,
        "incremental": incremental,
        "local_recovery": local_recovery,
        "wall_seconds": round(wall, 1),
        "restarts": result.restarts,
        "startup_seconds": [round(s, 2) for s in result.startup_seconds],
        "restore_point_seconds": [round(s, 2) for s in result.restore_point_seconds],
        "restored_from": result.restored_from,
        "checkpoints": len(completed),
        "steady_checkpoints": len(steady),
        "steady": _summary(steady),
        "series": _series(completed, steady, started_wall),
    }
    log(f"{label}: {json.dumps(out['steady'])} startup {out['startup_seconds']}")
    return out


def _loaded(meta: md.CheckpointMetadata, a: argparse.Namespace) -> bool:
    """Whether every source partition had finished loading its keys at this checkpoint."""
    positions = meta.source_positions.get(StepId("updates"), {})
    shares = {f"updates-{p}": (a.keys - p + P - 1) // P for p in range(P)}
    return bool(positions) and all(
        int(positions.get(name, 0)) > share for name, share in shares.items()
    )


def _series(
    completed: list[md.CheckpointMetadata], steady: list[md.CheckpointMetadata], started: float
) -> list[dict[str, Any]]:
    """Every completed checkpoint in order (for reading, not for the goals): its trigger time
    since the run started, its duration, its bytes written, whether it counts as steady."""
    steady_ids = {m.checkpoint_id for m in steady}
    return [
        {
            "id": int(m.checkpoint_id),
            "at_s": round(m.trigger_time - started, 1),
            "duration_s": round(m.completion_time - m.trigger_time, 3),
            "uploaded_bytes": layout.uploaded_size(m),
            "steady": m.checkpoint_id in steady_ids,
        }
        for m in sorted(completed, key=lambda m: m.checkpoint_id)
    ]


def _summary(checkpoints: list[md.CheckpointMetadata]) -> dict[str, Any]:
    if not checkpoints:
        return {}
    durations = [m.completion_time - m.trigger_time for m in checkpoints]
    sizes = [m.total_size for m in checkpoints]
    written = [layout.uploaded_size(m) for m in checkpoints]
    return {
        "duration_s": _spread(durations, 3),
        "state_bytes": _spread(sizes, 0),
        "uploaded_bytes": _spread(written, 0),
    }


def _spread(values: list[float] | list[int], digits: int) -> dict[str, float]:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return {
        "median": round(statistics.median(ordered), digits),
        "p90": round(p90, digits),
        "max": round(ordered[-1], digits),
    }


def _ratio(full: list[dict[str, Any]], incremental: list[dict[str, Any]], key: str) -> float | None:
    def median(runs: list[dict[str, Any]]) -> float | None:
        values = [r["steady"][key]["median"] for r in runs if r["steady"]]
        return statistics.median(values) if values else None

    f, i = median(full), median(incremental)
    return None if not f or not i else round(f / i, 1)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    log(f"{a.keys:,} keys of {a.value_bytes} bytes, {a.rate:,.0f} updates/s for {a.seconds:g}s")
    runs: dict[str, list[dict[str, Any]]] = {"full": [], "incremental": []}
    restore: dict[str, Any] = {}
    window_job: dict[str, Any] = {}
    work = pathlib.Path(tempfile.mkdtemp(prefix="state-scale-"))
    with harness.spark_and_s3(
        f"local[{P}]", app_name="state-scale", parallelism=P, bucket=ours.BUCKET
    ) as (spark, s3):
        for i in range(0 if a.skip_state else a.repeats):
            for kind in harness.interleaved(["full", "incremental"], i):
                runs[kind].append(
                    run_once(a, spark, s3, f"{kind}-{i}", kind == "incremental", False)
                )
        if not a.skip_restore:
            for kind in ("full", "incremental", "incremental-local"):
                incremental, local = kind != "full", kind == "incremental-local"
                label = f"restore-{kind}"
                restore[kind] = run_once(a, spark, s3, label, incremental, True, local)
        try:
            if a.window_events > 0:
                window_job = windows.run(a, spark, s3, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    doc = {
        "benchmark": "state_scale",
        "method": __doc__,
        "setup": {k: str(v) if isinstance(v, pathlib.Path) else v for k, v in vars(a).items()},
        "machine": machine.describe(),
        "runs": runs,
        "restore": restore,
        "full_over_incremental": {
            "uploaded_bytes": _ratio(runs["full"], runs["incremental"], "uploaded_bytes"),
            "duration_s": _ratio(runs["full"], runs["incremental"], "duration_s"),
        },
        "window_job": window_job,
        "goals": {
            "uploaded_bytes_ratio": 20.0,
            "duration_ratio": 10.0,
            "window_job_incremental_median_s": windows.GOAL_SECONDS,
        },
    }
    text = json.dumps(doc, indent=1)
    if a.output is not None:
        a.output.write_text(text + "\n")
    print(text)
    return 0 if window_job.get("all_windows_exact", True) else 1


if __name__ == "__main__":
    sys.exit(main())
