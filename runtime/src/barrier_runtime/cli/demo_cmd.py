"""``cjob demo``: a checkpointed job, a crash midway, the recovery, and the proof.

It starts an embedded S3 server (SeaweedFS) unless ``--store`` names one, runs
the keyed running count with checkpoints and an exactly-once file sink in that
store, kills one worker slice midway, restarts from the latest completed
checkpoint, and finally checks the published output against the crash-free
result (which this job makes easy to compute: key *k*'s *n*-th event has
count *n*).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

from barrier_runtime import demo, testing
from barrier_runtime.checkpoint import types
from barrier_runtime.connectors import files
from barrier_runtime.local import executor as executor_mod
from barrier_runtime.local import faults
from barrier_runtime.storage import checkpoint_store, embedded, object_store

BUCKET = "cjob-demo"


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("demo", help="run the demo job with a crash and a verified recovery")
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--events-per-key", type=int, default=300)
    parser.add_argument("--parallelism", type=int, default=3)
    parser.add_argument("--interval", type=float, default=0.5, help="checkpoint interval (s)")
    parser.add_argument("--rate", type=float, default=40_000, help="events per second in total")
    parser.add_argument("--unaligned", action="store_true", help="unaligned checkpoints")
    parser.add_argument("--no-crash", action="store_true", help="do not kill a worker")
    parser.add_argument("--store", help="use this store URL instead of an embedded S3 server")
    parser.add_argument("--json", action="store_true", help="print one JSON summary only")
    parser.set_defaults(run=run)


@contextlib.contextmanager
def _storage(args: argparse.Namespace, say: Any) -> Iterator[tuple[str, str]]:
    run_id = uuid.uuid4().hex[:8]
    if args.store:
        base = args.store.rstrip("/")
        yield f"{base}/{run_id}/checkpoints", f"{base}/{run_id}/output"
        return
    say("starting an embedded S3 server (SeaweedFS) on 127.0.0.1 …")
    with embedded.EmbeddedS3Server(buckets=[BUCKET]) as server:
        say(f"S3 ready at {server.endpoint}, bucket {BUCKET}")
        with _credentials(server):
            yield (
                server.url(BUCKET, f"{run_id}/checkpoints"),
                server.url(BUCKET, f"{run_id}/output"),
            )


@contextlib.contextmanager
def _credentials(server: embedded.EmbeddedS3Server) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    os.environ["AWS_ACCESS_KEY_ID"] = server.access_key
    os.environ["AWS_SECRET_ACCESS_KEY"] = server.secret_key
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run(args: argparse.Namespace) -> int:
    quiet = args.json
    started = time.monotonic()

    def say(line: str) -> None:
        if not quiet:
            print(f"[{time.monotonic() - started:6.1f}s] {line}", flush=True)

    with _storage(args, say) as (checkpoint_url, output_url):
        summary = _run_job(args, checkpoint_url, output_url, say)
    summary["wall_time_s"] = round(time.monotonic() - started, 2)
    if quiet:
        print(json.dumps(summary))
    else:
        ok = summary["exactly_once"]
        mark = "OK" if ok else "FAILED"
        say(
            f"{mark}: {summary['records']:,} records published, lost {summary['lost']}, "
            f"duplicated {summary['duplicated']}, out-of-order {summary['out_of_order']} "
            "(compared with the crash-free result)"
        )
    return 0 if summary["exactly_once"] else 1


def _run_job(
    args: argparse.Namespace, checkpoint_url: str, output_url: str, say: Any
) -> dict[str, Any]:
    partitions = 6
    sink = files.FileSink(output_url)
    flow = demo.running_count_flow(
        sink,
        keys=args.keys,
        events_per_key=args.events_per_key,
        partitions=partitions,
        rate_per_partition=args.rate / partitions,
    )
    total = args.keys * args.events_per_key
    per_slice = total // args.parallelism
    crashes = (
        []
        if args.no_crash
        else [
            faults.Crash(
                faults.FaultPoint.PROCESSING,
                task="count",
                subtask=args.parallelism - 1,
                after_records=int(per_slice * 0.45),
            )
        ]
    )
    store = checkpoint_store.CheckpointStore(
        object_store.open_object_store(checkpoint_url, create_bucket=True), "demo/running-count"
    )
    config = types.CheckpointConfig(interval=args.interval, unaligned=args.unaligned)
    job = executor_mod.LocalExecutor(
        flow,
        parallelism=args.parallelism,
        store=store,
        config=config,
        fault_injector=faults.FaultInjector(crashes),
        restart_backoff=0.5,
    )
    mode = "unaligned" if args.unaligned else "aligned"
    say(
        f"job running-count: {total:,} events over {args.keys:,} keys, P={args.parallelism}, "
        f"exactly-once ({mode}) checkpoints every {args.interval}s to {store.describe()}"
    )
    if crashes:
        say(f"a worker slice will be killed after ~{int(per_slice * 0.45):,} of its records")
    watcher = _Watcher(job, say)
    watcher.start()
    try:
        result = job.run()
    finally:
        watcher.stop()
    say(
        f"job finished: {len(result.completed_checkpoints)} checkpoints completed, "
        f"{result.restarts} restart(s); verifying the output in the store …"
    )
    expected = (
        {"key": f"k{k}", "seq": s, "count": s + 1}
        for k in range(args.keys)
        for s in range(args.events_per_key)
    )
    output = list(files.FileSink(output_url).read_committed())
    report = testing.check_exactly_once(expected, output)
    return {
        **report.as_dict(),
        "records": len(output),
        "exactly_once": report.exactly_once,
        "checkpoints_completed": len(result.completed_checkpoints),
        "restarts": result.restarts,
        "restored_from": [c for c in result.restored_from if c is not None],
        "failures": result.failures,
    }


class _Watcher:
    """Prints checkpoint completions and restarts as they happen."""

    def __init__(self, job: executor_mod.LocalExecutor, say: Any) -> None:
        self._job = job
        self._say = say
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="demo-watch")
        self._seen: set[int] = set()
        self._restarts = 0
        self._attempts_seen = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        self._thread.join()
        self._poll()

    def _loop(self) -> None:
        while not self._done.wait(0.1):
            self._poll()

    def _poll(self) -> None:
        stats = self._job.coordinator.stats()
        for entry in sorted(stats.history, key=lambda e: e.checkpoint_id):
            if entry.checkpoint_id in self._seen or entry.end_time is None:
                continue
            self._seen.add(entry.checkpoint_id)
            duration = (entry.duration or 0) * 1000
            if entry.status.value == "completed":
                self._say(
                    f"checkpoint {entry.checkpoint_id} completed in {duration:.0f} ms, "
                    f"{entry.state_size / 1024:.0f} KiB"
                )
            else:
                reason = entry.failure_reason.value if entry.failure_reason else "?"
                self._say(f"checkpoint {entry.checkpoint_id} aborted ({reason})")
        result = self._job.result
        while self._restarts < result.restarts:
            self._say(f"CRASH {result.failures[self._restarts]}")
            self._restarts += 1
        while self._attempts_seen < len(result.restored_from):
            restored = result.restored_from[self._attempts_seen]
            if self._attempts_seen > 0:
                origin = "empty state" if restored is None else f"checkpoint {restored}"
                self._say(f"recovered: attempt {self._attempts_seen} restored from {origin}")
            self._attempts_seen += 1
