"""Benchmark: keyed state four times its memory budget, in the on-disk backend (issue 32).

    PYTHONPATH=runtime/src:bench .venv/bin/python -m cjob_bench run state-memory \\
        [--budget-mib 256] [--times 4]

The method, fixed before measuring:

* the job is state-scale's (:mod:`.state_scale_pipeline`: every key loaded once with a
  value of ``--value-bytes`` of noise, then ``--rate`` updates per second for
  ``--seconds``), at P = 2 on local Spark, incremental checkpoints every second to the
  embedded S3 server, keyed state in the on-disk backend with ``--budget-mib`` per
  subtask (one subtask per worker process);
* its key count makes each worker's state about ``--times`` times the budget (a stored
  entry counted as its value and 16 bytes of key and overhead); the state's real size is
  reported: the last checkpoint's state size over P;
* every worker's RSS (``VmRSS``) is sampled every 0.25 s from the driver;
* the *allowance* is measured, not assumed: the same job with the same records, their
  keys taken modulo a hundredth of the key count (so its state fits in the cache), same
  budget, same sampling; its workers' peak RSS is what a worker takes besides its state
  (the interpreter, Arrow, Spark's Python worker, batches in flight, upload buffers);
* both load in batches of 2,000 records, as the update phase sends them (the default
  load batch of 20,000 holds more in flight than the budget);
* the goal: every worker's peak RSS at most the budget plus that allowance.

Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
from typing import Any

from barrier_runtime.core import types
from barrier_runtime.driver.restart import Backoff
from barrier_runtime.spark import driver, session
from cjob_bench.harness import machine
from cjob_bench.harness import runs as harness
from cjob_bench.peers import ours
from cjob_bench.probe import sampling

PIPELINE = str(pathlib.Path(__file__).with_name("state_scale_pipeline.py"))
P = 2
MiB = 1 << 20
ENTRY_OVERHEAD = 16
LOAD_BATCH = 2_000
log = harness.logger("state-memory")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-mib", type=int, default=256)
    parser.add_argument("--times", type=float, default=4.0, help="state over budget, per worker")
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--rate", type=float, default=20_000.0, help="updates per second")
    parser.add_argument("--seconds", type=float, default=30.0, help="of updates")
    parser.add_argument("--output", type=pathlib.Path, default=None)
    return parser.parse_args(argv)


def run_once(
    a: argparse.Namespace, spark: Any, s3: Any, keys: int, distinct: int, label: str
) -> dict[str, Any]:
    prefix = f"state-memory/{label}-{int(time.time() * 1000)}"
    args = ["--keys", str(keys), "--value-bytes", str(a.value_bytes)]
    args += ["--rate", str(a.rate), "--seconds", str(a.seconds), "--partitions", str(P)]
    args += ["--distinct", str(distinct), "--load-batch", str(LOAD_BATCH)]
    backend = types.StateBackend(types.StateBackendKind.DISK, a.budget_mib * MiB)
    spec = ours.job_spec(
        PIPELINE,
        args,
        s3=s3,
        prefix=prefix,
        parallelism=P,
        checkpoint=types.CheckpointConfig(
            interval=1.0, timeout=600, incremental=True, state_backend=backend
        ),
        restart=ours.no_restarts(Backoff(initial=0.1, max=1.0)),
    )
    log(f"{label}: {keys:,} keys, {a.budget_mib} MiB per subtask")
    job = driver.SparkDriver(spec, session=spark)
    probed = sampling.JobProbe(job).run()
    peaks: dict[int, int] = {}
    for sample in probed.samples:
        for worker, rss in sample.rss.items():
            peaks[worker] = max(peaks.get(worker, 0), rss)
    last = max(probed.checkpoints, key=lambda m: m.checkpoint_id, default=None)
    out = {
        "label": label,
        "keys": keys,
        "wall_seconds": round(probed.elapsed, 1),
        "attempts": probed.result.attempts,
        "checkpoints_completed": len(probed.result.completed_checkpoints),
        "state_bytes_per_worker": None if last is None else last.total_size // P,
        "peak_rss_mib": {str(w): round(r / MiB, 1) for w, r in sorted(peaks.items())},
        "samples": len(probed.samples),
    }
    log(f"{label}: {json.dumps(out)}")
    return out


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    budget = a.budget_mib * MiB
    keys = int(a.times * budget * P / (a.value_bytes + ENTRY_OVERHEAD))
    with harness.spark_and_s3(
        f"local[{P}]",
        app_name="state-memory",
        parallelism=P,
        bucket=ours.BUCKET,
        conf=session.state_backend_conf(types.StateBackend(types.StateBackendKind.DISK)),
    ) as (spark, s3):
        small = run_once(a, spark, s3, keys, max(keys // 100, 1000), "allowance")
        large = run_once(a, spark, s3, keys, 0, "large")
    allowance = max(small["peak_rss_mib"].values(), default=0.0)
    peak = max(large["peak_rss_mib"].values(), default=0.0)
    state = large["state_bytes_per_worker"] or 0
    doc = {
        "benchmark": "state_memory",
        "method": __doc__,
        "setup": {k: str(v) if isinstance(v, pathlib.Path) else v for k, v in vars(a).items()},
        "machine": machine.describe(),
        "runs": {"allowance": small, "large": large},
        "budget_mib": a.budget_mib,
        "allowance_mib": allowance,
        "state_over_budget_per_worker": round(state / budget, 2),
        "peak_rss_mib": peak,
        "within_budget_plus_allowance": peak <= a.budget_mib + allowance,
    }
    text = json.dumps(doc, indent=1)
    if a.output is not None:
        a.output.write_text(text + "\n")
    print(text)
    return 0 if doc["within_budget_plus_allowance"] else 1


if __name__ == "__main__":
    sys.exit(main())
