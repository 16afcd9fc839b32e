"""``cjob demo``: a job on local Spark, a worker killed midway, the recovery, and the proof.

1. start an embedded S3 server (SeaweedFS) unless ``--store`` names one;
2. start a local Spark and run the keyed running count
   (:mod:`barrier_runtime.demo`) as one barrier stage of P worker processes,
   with exactly-once checkpoints and a transactional file sink, both in S3;
3. once a checkpoint has completed and about ``--kill-at`` of the events went
   through, SIGKILL one worker process: the stage fails, the driver restarts
   it from the latest completed checkpoint;
4. when the input is exhausted, read the published output back and compare it
   with the crash-free result (key *k*'s *n*-th event has count *n*): lost,
   duplicated and out-of-order must all be zero.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import threading
import uuid
from collections.abc import Iterator
from typing import Any

from barrier_runtime import demo, testing
from barrier_runtime.api import steps
from barrier_runtime.cli import preflight, progress
from barrier_runtime.connectors import files
from barrier_runtime.core import types
from barrier_runtime.driver import restart
from barrier_runtime.spark import config as config_mod
from barrier_runtime.spark import driver as driver_mod
from barrier_runtime.spark import pipeline
from barrier_runtime.storage import embedded

BUCKET = "cjob-demo"
JOB = "demo/running-count"
_CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "demo", help="run the demo job on local Spark with a worker killed and a verified recovery"
    )
    opt = parser.add_argument
    opt(
        "--keys",
        type=int,
        default=1000,
        metavar="N",
        help="distinct keys of the generated events (default %(default)s)",
    )
    opt(
        "--events-per-key",
        type=int,
        default=300,
        metavar="N",
        help="events generated per key (default %(default)s)",
    )
    opt(
        "--parallelism",
        type=int,
        default=3,
        metavar="P",
        help="Spark workers (default %(default)s)",
    )
    opt(
        "--interval",
        type=float,
        default=0.5,
        metavar="SECONDS",
        help="time between two checkpoints (default %(default)g)",
    )
    opt(
        "--rate",
        type=float,
        default=40_000,
        metavar="EVENTS",
        help="events per second in total (default %(default)g)",
    )
    opt("--unaligned", action="store_true", help="unaligned checkpoints")
    opt("--no-crash", action="store_true", help="do not kill a worker")
    opt(
        "--kill-at",
        type=float,
        default=0.45,
        metavar="FRACTION",
        help="kill a worker after this share of the events (default %(default)g)",
    )
    opt(
        "--store",
        metavar="URL",
        help="use this store URL (s3://BUCKET/PREFIX?endpoint=http://HOST:PORT or a directory) "
        "instead of an embedded S3 server",
    )
    opt("--master", metavar="URL", help="Spark master URL (default local[PARALLELISM])")
    opt("--json", action="store_true", help="print one JSON summary only (or one error event)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    preflight.demo_options(args)
    out = _QuietOutput() if args.json else progress.Output(json_lines=False)
    with _storage(args, out) as (checkpoint_url, output_url):
        summary = _run_job(args, checkpoint_url, output_url, out)
    summary["wall_time_s"] = round(out.elapsed, 2)
    if args.json:
        print(json.dumps(summary), flush=True)
    else:
        mark = "OK" if summary["exactly_once"] else "FAILED"
        out.say(
            f"{mark}: {summary['records']:,} records published, lost {summary['lost']}, "
            f"duplicated {summary['duplicated']}, out-of-order {summary['out_of_order']} "
            "(compared with the crash-free result)"
        )
    return 0 if summary["exactly_once"] else 1


class _QuietOutput(progress.Output):
    """``--json``: no progress lines, only the final summary."""

    def __init__(self) -> None:
        super().__init__(json_lines=True)

    def say(self, text: str, event: str = "info", **fields: Any) -> None:
        return None


@contextlib.contextmanager
def _storage(args: argparse.Namespace, out: progress.Output) -> Iterator[tuple[str, str]]:
    run_id = uuid.uuid4().hex[:8]
    if args.store:
        base = args.store.rstrip("/")
        yield f"{base}/{run_id}/checkpoints", f"{base}/{run_id}/output"
        return
    out.say("starting an embedded S3 server (SeaweedFS) on 127.0.0.1 …")
    with embedded.EmbeddedS3Server(buckets=[BUCKET]) as server:
        out.say(f"S3 ready at {server.endpoint}, bucket {BUCKET}")
        # Spark's Python workers inherit the environment the JVM starts with.
        credentials = (server.access_key, server.secret_key)
        with _environment(dict(zip(_CREDENTIALS, credentials, strict=True))):
            yield (
                server.url(BUCKET, f"{run_id}/checkpoints"),
                server.url(BUCKET, f"{run_id}/output"),
            )


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _spec(
    args: argparse.Namespace, checkpoint_url: str, output_url: str
) -> driver_mod.SparkJobSpec:
    pipeline_args = [
        "--out",
        output_url,
        "--keys",
        str(args.keys),
        "--events-per-key",
        str(args.events_per_key),
        "--rate",
        str(args.rate),
    ]
    return driver_mod.SparkJobSpec(
        pipeline=pipeline.PipelineRef(module=demo.__name__, args=tuple(pipeline_args)),
        parallelism=args.parallelism,
        store=config_mod.StoreRef(checkpoint_url, JOB),
        checkpoint=types.CheckpointConfig(interval=args.interval, unaligned=args.unaligned),
        master=args.master,
        restart=driver_mod.RestartSettings(
            max_restarts=3, backoff=restart.Backoff(initial=0.5, max=5.0)
        ),
    )


def _run_job(
    args: argparse.Namespace, checkpoint_url: str, output_url: str, out: progress.Output
) -> dict[str, Any]:
    spec = _spec(args, checkpoint_url, output_url)
    total = args.keys * args.events_per_key
    flow = pipeline.load_flow(spec.pipeline)
    target = preflight.job(spec, flow, preflight.DEMO)
    out.say(f"starting Spark ({spec.effective_master}) …")
    driver = driver_mod.SparkDriver(spec, flow=flow, store=target.store, restore=target.restore)
    mode = "unaligned" if args.unaligned else "aligned"
    out.say(
        f"job running-count: {total:,} events over {args.keys:,} keys, P={args.parallelism} "
        f"Spark workers, exactly-once ({mode}) checkpoints every {args.interval:g}s "
        f"to {driver.store.describe()}"
    )
    killer = None if args.no_crash else _WorkerKiller(driver, out, after=int(total * args.kill_at))
    with progress.ProgressView(driver.job, out, status_every=3.0):
        if killer is not None:
            killer.start()
        try:
            result = driver.run()
        finally:
            if killer is not None:
                killer.stop()
    out.say(
        f"job finished: {len(result.completed_checkpoints)} checkpoints completed, "
        f"{result.restarts} restart(s); verifying the output in the store …"
    )
    output = list(files.FileSink(output_url).read_committed())
    report = testing.check_exactly_once(
        demo.expected_output(args.keys, args.events_per_key), output
    )
    return {
        **report.as_dict(),
        "records": len(output),
        "exactly_once": report.exactly_once,
        "checkpoints_completed": len(result.completed_checkpoints),
        "restarts": result.restarts,
        "restored_from": [c for c in result.restored_from if c is not None],
        "failures": result.failures,
        "killed": None if killer is None else killer.killed,
    }


class _WorkerKiller:
    """SIGKILLs one worker process of the first attempt once it checkpointed and got far enough."""

    def __init__(self, driver: driver_mod.SparkDriver, out: progress.Output, *, after: int) -> None:
        self._driver = driver
        self._out = out
        self._after = after
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="demo-killer")
        self._sources = [
            s.step_id for s in driver.plan.flow.steps if isinstance(s, steps.SourceStep)
        ]
        self.killed: dict[str, int] | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._done.wait(0.05):
            if self._ready() and self._kill():
                return

    def _ready(self) -> bool:
        job = self._driver.job
        if job.coordinator.stats().latest_completed is None:
            return False
        emitted = job.runtime_metrics().records_out
        return sum(emitted.get(s, 0) for s in self._sources) >= self._after

    def _kill(self) -> bool:
        current = self._driver.runner.current
        pids = current.worker_pids if current is not None else {}
        if current is None or current.stopping or len(pids) < self._driver.spec.parallelism:
            return False
        worker = max(pids)
        self._out.say(
            f"KILL: SIGKILL to Spark worker {worker} (pid {pids[worker]}) of attempt "
            f"{current.number} after {self._after:,} events"
        )
        os.kill(pids[worker], signal.SIGKILL)
        self.killed = {"attempt": current.number, "worker": worker, "pid": pids[worker]}
        return True
