"""Checkpoint cost in CPU time: a job run by ``cjob run`` with and without checkpoints.

The method, fixed before any figure was seen:

* **The job, as a user runs it.** ``cjob run`` (a fresh process per run, cold:
  its own local Spark, ``local[P]``, P = 2) runs a pipeline file over
  Parquet files: a Nexmark query (:mod:`.pipeline`, its output committed by
  a ``FileSink``; :func:`nexmark_job`) or the suite's W2 (:func:`w2_job`),
  its checkpoints in the S3 server the benchmark starts
  (SeaweedFS ``weed mini``, :class:`EmbeddedS3Server`; one server for every run,
  each run under a prefix of its own). Bytecode caches on, as users' installs
  have them (:mod:`..harness.bytecode`), and one unmeasured warm-up run first
  (page cache, bytecode written).
* **Variants.** ``checkpoints_1s``: aligned exactly-once checkpoints every
  1 s (``--checkpoint-interval``); likewise ``checkpoints_100ms`` and any other
  interval asked for (:func:`variant`). ``no_periodic_checkpoints``: an interval
  of 10⁹ s; the end-of-input checkpoint, which commits the output, remains in
  every variant. With two variants repeat *i* runs them in the order A B when
  *i* is even, B A when odd (ABBA…); with more, repeat *i* rotates the order by
  *i* (a Latin square over as many repeats as variants), so a slow drift of the
  machine biases none.
* **CPU time.** User + system time of every process of the job, from ``/proc``
  (:mod:`..harness.cpu`): the ``cjob run`` driver, the Spark JVM, PySpark's
  daemon and Python workers, any process they start, short-lived ones
  included (a subreaper waits for every orphan), split by
  kind (driver, jvm, workers), plus the S3 server's CPU time over the run
  (what the Python workers use after their last 0.1 s sample is the only CPU
  time that can go uncounted: its bound is reported per run)
  (it serves only this job). End to end: from the command's start to the exit
  of its last process (Spark's start-up and the final checkpoint included).
* **Per million events**: CPU seconds divided by the events the query reads
  (of the kinds of its sources). Wall-clock: the same interval, per run.
* **Figures**: per variant, the median over repeats of each figure (total and
  per kind); the overhead of each checkpointing variant is
  ``median(with) / median(without) - 1``, for CPU time (the goal) and
  wall-clock. Every run's committed output is checked
  against the oracle; a failed or wrong run is reported and left out.

CPU time does not depend on other load on the machine the way wall-clock
does (though caches and frequency still do): figures are labelled with the
load average around each run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import shutil
import statistics
import sys
import uuid
from collections.abc import Callable
from typing import Any

from barrier_runtime.connectors.files import FileSink
from barrier_runtime.storage.embedded import EmbeddedS3Server
from cjob_bench.harness import answers, bytecode, cpu, machine, runs
from cjob_bench.nexmark import files, local, reference
from cjob_bench.workloads import data as wdata
from cjob_bench.workloads import files_ours

PIPELINE = pathlib.Path(__file__).with_name("pipeline.py")
BUCKET = "cjob-bench"
WITHOUT = "no_periodic_checkpoints"
NO_CHECKPOINTS = 1e9
KINDS = (cpu.DRIVER, cpu.JVM, cpu.WORKERS, cpu.S3_SERVER)


def variant(interval: float) -> str:
    """The name of the variant with checkpoints every ``interval`` s.

    >>> variant(1.0), variant(0.1), variant(2.5)
    ('checkpoints_1s', 'checkpoints_100ms', 'checkpoints_2500ms')
    """
    if interval >= 1 and float(interval).is_integer():
        return f"checkpoints_{int(interval)}s"
    return f"checkpoints_{round(interval * 1000)}ms"


WITH = variant(1.0)


@dataclasses.dataclass(frozen=True, slots=True)
class Job:
    """What a run runs: a pipeline file, its arguments, the events it reads, its check."""

    name: str
    pipeline: pathlib.Path
    args: Callable[[pathlib.Path], list[str]]
    """The pipeline's arguments, given the directory its output goes to."""
    events: int
    check: Callable[[pathlib.Path], dict[str, Any]] | None
    """``{"equal": bool, ...}`` about the committed output under a directory."""


def nexmark_job(query: str, data: pathlib.Path, *, check: bool = True) -> Job:
    """Nexmark ``query`` over the events under ``data`` (:mod:`.pipeline`)."""
    kinds = local.kinds_read(query)
    expected = None
    if check:
        expected = reference.expected(query, {k: files.read_kind(data, k) for k in kinds})

    def verdict(output: pathlib.Path) -> dict[str, Any]:
        rows = list(FileSink(str(output)).read_committed())
        assert expected is not None
        equal, detail = reference.same(query, rows, expected)
        return {"equal": equal, "detail": detail, "rows": len(rows)}

    return Job(
        query,
        PIPELINE,
        lambda out: ["--query", query, "--data", str(data), "--output", str(out)],
        sum(files.read_kind_rows(data, k) for k in kinds),
        verdict if check else None,
    )


def w2_job(directory: pathlib.Path, *, events: int, keys: int = 100_000, seed: int = 1) -> Job:
    """The suite's W2 (a per-record keyed running count, :mod:`..workloads.files_pipeline`)
    over ``events`` generated under ``directory``, 8 files, 8 192 records per batch."""
    dataset = wdata.generate(directory, events=events, keys=keys, files=8, seed=seed)

    def verdict(output: pathlib.Path) -> dict[str, Any]:
        got, _ = files_ours._last_values(output, dataset.keys)
        return dict(answers.check(got, dataset.expected("W2")))

    return Job(
        "W2",
        pathlib.Path(files_ours.PIPELINE),
        lambda out: [
            "--workload",
            "W2",
            "--input",
            str(dataset.parquet),
            "--output",
            str(out),
            "--keys",
            str(keys),
            "--batch-size",
            "8192",
        ],
        events,
        verdict,
    )


class Bench:
    """Runs of one job against one S3 server."""

    def __init__(
        self,
        job: Job,
        work: pathlib.Path,
        s3: EmbeddedS3Server,
        *,
        parallelism: int = 2,
        intervals: tuple[float, ...] = (1.0,),
    ) -> None:
        self.job, self.work, self.s3 = job, work, s3
        self.parallelism = parallelism
        self.intervals = {variant(i): i for i in intervals}
        self.intervals[WITHOUT] = NO_CHECKPOINTS

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(runs.BENCH), *sys.path]))
        env["AWS_ACCESS_KEY_ID"] = self.s3.access_key
        env["AWS_SECRET_ACCESS_KEY"] = self.s3.secret_key
        env["CJOB_LOG_DIR"] = str(self.work / "logs")
        env["CJOB_JOBS_DIR"] = str(self.work / "jobs")
        return env

    def command(self, variant: str, name: str, output: pathlib.Path) -> list[str]:
        interval = self.intervals[variant]
        cjob = pathlib.Path(sys.executable).with_name("cjob")
        store = self.s3.url(BUCKET, f"cpu-cost/{name}")
        return [
            str(cjob), "run", str(self.job.pipeline), "-p", str(self.parallelism),
            "--checkpoint-interval", repr(interval), "--store", store,
            "--max-restarts", "0", "--json", "--", *self.job.args(output),
        ]  # fmt: skip

    def run(self, variant: str) -> dict[str, Any]:
        """One measured run of ``variant``."""
        name = f"{self.job.name}-{variant}-{uuid.uuid4().hex[:8]}"
        output = self.work / f"out-{name}"
        load_before = machine.loadavg()
        s3_pid = self.s3.pid
        if s3_pid is None:
            raise cpu.CpuAccountingError("the S3 server is not running")
        s3_before = cpu.process_ticks(s3_pid)
        job = cpu.JobCpu(self.command(variant, name, output), env=self.env())
        done = job.run(str(self.work / f"{name}.stdout"))
        s3_seconds = (cpu.process_ticks(s3_pid) - s3_before) / cpu.CLK_TCK
        summary = _summary(done.stdout)
        if done.returncode != 0 or summary is None:
            err = pathlib.Path(self.work / f"{name}.stdout.stderr").read_text()[-2000:]
            raise RuntimeError(f"cjob run exited {done.returncode}: {err}")
        kinds = {k: done.by_kind.get(k, 0.0) for k in (cpu.DRIVER, cpu.JVM, cpu.WORKERS)}
        kinds[cpu.S3_SERVER] = s3_seconds
        other = {k: round(v, 3) for k, v in done.by_kind.items() if k not in kinds}
        total = done.cpu_seconds + s3_seconds
        per_million = 1e6 / self.job.events
        out: dict[str, Any] = {
            "variant": variant,
            "wall_seconds": round(done.wall_seconds, 3),
            "cpu_seconds": round(total, 3),
            "cpu_seconds_by_kind": {k: round(v, 3) for k, v in kinds.items()},
            "cpu_seconds_other_kinds": other,
            "cpu_seconds_per_million_events": round(total * per_million, 3),
            "events_read": self.job.events,
            "cpu_seconds_per_million_events_by_kind": {
                k: round(v * per_million, 3) for k, v in kinds.items()
            },
            "samples": done.samples,
            "cpu_seconds_unseen_bound": round(done.unseen_bound_seconds, 3),
            "accounting_gap_ticks": done.gap_ticks,
            "checkpoints_completed": summary.get("checkpoints_completed"),
            "final_checkpoint": summary.get("final_checkpoint"),
            "loadavg_before": load_before,
            "loadavg_after": machine.loadavg(),
        }
        out["correct"] = self.job.check(output) if self.job.check else {"equal": None}
        shutil.rmtree(output, ignore_errors=True)
        return out


def _summary(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            event = json.loads(line)
            if event.get("event") == "summary":
                return dict(event)
    return None


def measure(
    job: Job,
    work: pathlib.Path,
    *,
    repeats: int = 3,
    parallelism: int = 2,
    intervals: tuple[float, ...] = (1.0,),
    warmup: bool = True,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Interleaved repeats of every variant of ``job``; every run and the medians."""
    log = log or runs.logger("cpu-cost")
    bytecode.use_bytecode_cache()
    runs_: list[dict[str, Any]] = []
    with EmbeddedS3Server(buckets=[BUCKET]) as s3:
        bench = Bench(job, work, s3, parallelism=parallelism, intervals=intervals)
        if warmup:
            log(f"{job.name}: warm-up run (not measured)")
            runs.attempt("warm-up", lambda: bench.run(WITHOUT))
        for repeat in range(repeats):
            for name in order(list(bench.intervals), repeat):
                label = f"{job.name} repeat {repeat} {name}"
                result = runs.attempt(label, lambda v=name: bench.run(v))  # type: ignore[misc]
                runs_.append({"repeat": repeat, "variant": name, **result})
    return {
        "job": job.name,
        "events_read": job.events,
        "parallelism": parallelism,
        "checkpoint_intervals_seconds": list(intervals),
        "repeats": repeats,
        "machine": machine.describe(),
        "medians": summarise(runs_),
        "runs": runs_,
    }


def order(variants: list[str], repeat: int) -> list[str]:
    """The variants' order in repeat ``repeat``: ABBA for two, rotated for more.

    >>> [order(["a", "b"], r) for r in range(2)]
    [['a', 'b'], ['b', 'a']]
    >>> [order(["a", "b", "c"], r) for r in range(3)]
    [['a', 'b', 'c'], ['b', 'c', 'a'], ['c', 'a', 'b']]
    """
    if len(variants) <= 2:
        return runs.interleaved(variants, repeat)
    return runs.rotated(variants, repeat)


def summarise(runs_: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians per variant over the successful, correct runs, and each variant's overhead
    over ``no_periodic_checkpoints`` (under ``overheads``)."""
    good = [r for r in runs_ if "error" not in r and r.get("correct", {}).get("equal") is not False]
    out: dict[str, Any] = {}
    for name in dict.fromkeys(r["variant"] for r in runs_):
        mine = [r for r in good if r["variant"] == name]
        if not mine:
            continue
        out[name] = {
            "runs": len(mine),
            "wall_seconds": _median([r["wall_seconds"] for r in mine]),
            "cpu_seconds": _median([r["cpu_seconds"] for r in mine]),
            "cpu_seconds_per_million_events": _median(
                [r["cpu_seconds_per_million_events"] for r in mine]
            ),
            "cpu_seconds_per_million_events_by_kind": {
                k: _median([r["cpu_seconds_per_million_events_by_kind"][k] for r in mine])
                for k in KINDS
            },
            "checkpoints_completed": _median([r["checkpoints_completed"] or 0 for r in mine]),
        }
    if WITHOUT in out:
        out["overheads"] = {
            name: _overhead(out[name], out[WITHOUT]) for name in out if name != WITHOUT
        }
    return out


def _overhead(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """``a`` over ``b``: CPU time per million events and wall-clock, and CPU by kind."""
    return {
        "cpu_overhead": round(
            a["cpu_seconds_per_million_events"] / b["cpu_seconds_per_million_events"] - 1, 4
        ),
        "wall_overhead": round(a["wall_seconds"] / b["wall_seconds"] - 1, 4),
        "cpu_overhead_by_kind_seconds_per_million_events": {
            k: round(
                a["cpu_seconds_per_million_events_by_kind"][k]
                - b["cpu_seconds_per_million_events_by_kind"][k],
                3,
            )
            for k in KINDS
        },
    }


def _median(values: list[float]) -> float:
    return round(float(statistics.median(values)), 3)
