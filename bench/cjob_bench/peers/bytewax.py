"""Runs the Bytewax peer as its users run a multi-process dataflow, and checks its answer.

Two processes of ``python -m bytewax.run cjob_bench.peers.bytewax_flow:flow
-i N -a "localhost:A;localhost:B" -w 1`` (what ``python -m bytewax.testing -p 2``
launches; ``-w 2`` in one process would share one GIL), with recovery on:
``python -m bytewax.recovery DIR 2`` first, then ``-r DIR -s 1 -b 0``
(SQLite snapshots every second on local disk). Timed from launching the
processes to both exiting (interpreter and Bytewax start-up included).
"""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
import time
from typing import Any

from cjob_bench.harness import answers, machine
from cjob_bench.workloads import FILE_WORKLOADS, data

FLOW = "cjob_bench.peers.bytewax_flow:flow"
TIMEOUT = 3600


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def run(
    workload: str, dataset: data.DataSet, work: pathlib.Path, *, processes: int, batch_size: int
) -> dict[str, Any]:
    name = f"bytewax-{workload}-{time.monotonic_ns()}"
    out, db = work / name / "output", work / name / "recovery"
    bench_dir = pathlib.Path(__file__).resolve().parents[2]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(bench_dir), *sys.path]))
    env |= {
        "SUITE_BW_WORKLOAD": workload,
        "SUITE_BW_INPUT": str(
            dataset.jsonl if FILE_WORKLOADS[workload].json_lines else dataset.parquet
        ),
        "SUITE_BW_OUTPUT": str(out),
        "SUITE_BW_KEYS": str(dataset.keys),
        "SUITE_BW_BATCH": str(batch_size),
    }
    db.mkdir(parents=True)
    load_before = machine.loadavg()
    started = time.time()
    subprocess.run(
        [sys.executable, "-m", "bytewax.recovery", str(db), str(processes)],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    addresses = ";".join(f"localhost:{p}" for p in _free_ports(processes))
    logs = [work / name / f"process-{i}.log" for i in range(processes)]
    procs = []
    for i, log in enumerate(logs):
        recovery = ["-r", str(db), "-s", "1", "-b", "0"]
        argv = [sys.executable, "-m", "bytewax.run", FLOW, "-i", str(i), "-a", addresses, "-w", "1"]
        # Bytewax's Rust side prints connection retries on stdout; the suite's own
        # stdout carries only its JSON document, so a peer's output goes to its log.
        with log.open("w") as err:
            procs.append(
                subprocess.Popen([*argv, *recovery], env=env, stdout=err, stderr=subprocess.STDOUT)
            )
    codes = [p.wait(TIMEOUT) for p in procs]
    wall = time.time() - started
    for code, log in zip(codes, logs, strict=True):
        if code != 0:
            raise RuntimeError(f"bytewax run failed ({code}):\n{log.read_text()[-3000:]}")
    got = answers.empty(dataset.keys)
    for path in out.glob("*.json"):
        body = json.loads(path.read_text())
        answers.merge_max(got, body["keys"], body["values"])
    return {
        "system": "bytewax",
        "variant": f"{processes}_processes_recovery_1s",
        "wall_seconds": round(wall, 3),
        "events_per_second": round(dataset.events / wall),
        "loadavg_before": load_before,
        "loadavg_after": machine.loadavg(),
        "correct": answers.check(got, dataset.expected(workload)),
    }
