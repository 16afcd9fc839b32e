"""Benchmark: checkpoint duration of aligned vs unaligned checkpoints under back-pressure.

The same job (keyed running count, P = 3) runs twice behind a deliberately
slow sink, so every channel into the sink task is full. Aligned barriers queue
behind that in-flight data; unaligned barriers overtake it. Prints one JSON
object: per mode the median/max checkpoint duration, then the ratio, and the
result of a third run that crashes after restoring from unaligned checkpoints
(exactly-once checker against the aligned run's output).

    PYTHONPATH=runtime/src:bench .venv/bin/python -m cjob_bench run unaligned [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

from barrier_runtime.core import metadata
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.demo import running_count_flow
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.testing import (
    Crash,
    FaultInjector,
    FaultPoint,
    LocalExecutor,
    TestingSink,
    check_exactly_once,
)


def run(unaligned: bool, events_per_key: int, crash: bool = False) -> dict[str, Any]:
    sink = TestingSink()
    store = CheckpointStore(open_object_store(tempfile.mkdtemp(prefix="bench-")), "bench/job")
    injector = FaultInjector(
        [Crash(FaultPoint.PROCESSING, task="count", subtask=1, after_records=8_000)]
        if crash
        else []
    )
    executor = LocalExecutor(
        running_count_flow(
            sink,
            keys=300,
            events_per_key=events_per_key,
            partitions=3,
            batch_size=100,
            sink_delay_per_batch=0.01,
        ),
        parallelism=3,
        store=store,
        config=CheckpointConfig(interval=0.5, timeout=120, unaligned=unaligned, retained=1000),
        channel_capacity=32,
        fault_injector=injector,
    )
    durations: dict[int, float] = {}
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for entry in executor.coordinator.stats().history:
                if entry.duration is not None and entry.status.value == "completed":
                    durations[entry.checkpoint_id] = entry.duration
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    started = time.monotonic()
    result = executor.run()
    done.set()
    watcher.join()
    # The final checkpoint runs after the input ended (no back-pressure): leave it out.
    periodic = [d for cid, d in sorted(durations.items()) if cid != result.final_checkpoint]
    channel_bytes = sum(
        h.size
        for m in store.list_completed()
        for h in m.state_handles
        if h.kind is metadata.HandleKind.CHANNEL
    )
    restored = [cid for cid in result.restored_from if cid is not None]
    restored_channel_bytes = sum(
        h.size
        for cid in restored
        for h in store.load(cid).state_handles
        if h.kind is metadata.HandleKind.CHANNEL
    )
    return {
        "output": sink.output,
        "stats": {
            "restored_from": restored,
            "restored_channel_state_bytes": restored_channel_bytes,
            "checkpoints": len(periodic),
            "median_duration_s": round(statistics.median(periodic), 4) if periodic else None,
            "max_duration_s": round(max(periodic), 4) if periodic else None,
            "wall_time_s": round(time.monotonic() - started, 2),
            "restarts": result.restarts,
            "retained_channel_state_bytes": channel_bytes,
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller input (for CI smoke runs)")
    args = parser.parse_args(argv)
    events = 200 if args.quick else 400
    aligned = run(False, events)
    unaligned = run(True, events)
    recovered = run(True, events, crash=True)
    report = check_exactly_once(aligned["output"], recovered["output"])
    a, u = aligned["stats"]["median_duration_s"], unaligned["stats"]["median_duration_s"]
    ratio = round(a / u, 1) if a and u else None
    out = {
        "benchmark": "unaligned_checkpoints",
        "job": "keyed running count, P=3, slow sink (10 ms per 100-record batch), capacity 32",
        "aligned": aligned["stats"],
        "unaligned": unaligned["stats"],
        "aligned_over_unaligned_median": ratio,
        "recovery_from_unaligned": {**recovered["stats"], **report.as_dict()},
        "target": {
            "min_ratio": 5.0,
            "met": bool(ratio and ratio >= 5.0)
            and report.exactly_once
            and recovered["stats"]["restarts"] == 1
            and recovered["stats"]["restored_channel_state_bytes"] > 0,
        },
    }
    print(json.dumps(out, indent=2))
    return 0 if out["target"]["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
