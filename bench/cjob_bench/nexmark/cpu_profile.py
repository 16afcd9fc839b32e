"""Where checkpoint cost goes: py-spy profiles of ``cjob run`` with and without checkpoints.

    python -m cjob_bench.nexmark.cpu_profile --query q5 --data D [--events N] --work DIR

runs the job of :mod:`.cpu_cost` (the same command line, P = 2) once without periodic
checkpoints and once with checkpoints every ``--interval`` s, each under ``py-spy record
--subprocesses`` (every process: driver, Spark's Python workers), and prints per function
the samples gained with checkpoints (inclusive: in any frame of a stack), largest first.
py-spy counts a thread blocked in a C-level wait as busy, so the upload thread's executor
loop (``_worker``) and ``Condition.wait`` gain samples that are idle time, not CPU.
``bench/results/profiles/checkpoint-cost-2026-11-28.txt`` was made this way.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import subprocess
import sys
import uuid

from barrier_runtime.storage.embedded import EmbeddedS3Server
from cjob_bench.harness import bytecode
from cjob_bench.nexmark import cpu_cost


def inclusive(raw: str) -> collections.Counter[str]:
    """Samples per function in py-spy's raw (collapsed) output, counted once per stack.

    >>> inclusive("a (x.py:1);b (x.py:2) 3\\na (x.py:1) 2\\n")
    Counter({'a': 5, 'b': 3})
    """
    counts: collections.Counter[str] = collections.Counter()
    for line in raw.splitlines():
        stack, _, samples = line.rpartition(" ")
        for frame in {f.split(" (")[0] for f in stack.split(";")}:
            counts[frame] += int(samples)
    return counts


def gained(without: str, with_: str, top: int = 45) -> list[tuple[int, int, int, str]]:
    """(gain, without, with, function) for the ``top`` largest gains, processes left out."""
    a, b = inclusive(without), inclusive(with_)
    names = [k for k in set(a) | set(b) if not k.startswith("process ")]
    names.sort(key=lambda k: (a[k] - b[k], k))
    return [(b[k] - a[k], a[k], b[k], k) for k in names[:top]]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m cjob_bench.nexmark.cpu_profile")
    parser.add_argument("--query", required=True, help="a Nexmark query or W2")
    parser.add_argument("--data", type=pathlib.Path, help="Nexmark events (not for W2)")
    parser.add_argument("--events", type=int, default=20_000_000, help="W2's, generated")
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--work", type=pathlib.Path, required=True)
    ns = parser.parse_args(argv)
    ns.work.mkdir(parents=True, exist_ok=True)
    bytecode.use_bytecode_cache()
    if ns.query == "W2":
        job = cpu_cost.w2_job(ns.work / "data", events=ns.events)
    else:
        job = cpu_cost.nexmark_job(ns.query, ns.data.resolve(), check=False)
    pyspy = pathlib.Path(sys.executable).with_name("py-spy")
    raws = []
    with EmbeddedS3Server(buckets=[cpu_cost.BUCKET]) as s3:
        bench = cpu_cost.Bench(job, ns.work, s3, intervals=(ns.interval,))
        for variant in (cpu_cost.WITHOUT, cpu_cost.variant(ns.interval)):
            name = f"{job.name}-{variant}-{uuid.uuid4().hex[:6]}"
            out = ns.work / f"{variant}.raw"
            command = bench.command(variant, name, ns.work / f"out-{name}")
            record = [str(pyspy), "record", "--subprocesses", "-r", "100", "-f", "raw"]
            with (ns.work / f"{variant}.log").open("w") as log:
                subprocess.run(
                    [*record, "-o", str(out), "--", *command],
                    env=bench.env(),
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    check=True,
                )
            raws.append(out.read_text())
    for gain, before, after, name in gained(*raws):
        print(f"{gain:6d} {before:6d} -> {after:6d} {name}")


if __name__ == "__main__":
    main()
