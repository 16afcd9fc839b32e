"""Ours on W1-W3v: one pipeline-file job per run (:mod:`cjob_bench.peers.ours`), timed like a user sees it.

Each run submits :mod:`.files_pipeline` through ``barrier_runtime.spark.driver``
on the suite's warm SparkSession (``local[P]``) with checkpoints to the
embedded SeaweedFS S3 server, and is timed from submission to completion:
worker start-up, source I/O, processing and the final (end-of-input)
checkpoint included. "Without checkpoints" sets the periodic interval to
10⁹ s; the end-of-input checkpoint remains, so the difference is the cost
of the periodic ones.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import time
import uuid
from typing import Any

import numpy as np

from barrier_runtime.driver.restart import Backoff
from barrier_runtime.spark import driver
from barrier_runtime.storage.embedded import EmbeddedS3Server
from cjob_bench.harness import answers, checkpoint_counts, machine
from cjob_bench.peers import ours
from cjob_bench.workloads import FILE_WORKLOADS, data

PIPELINE = str(pathlib.Path(__file__).parents[1] / "workloads" / "files_pipeline.py")
BUCKET = ours.BUCKET


@dataclasses.dataclass(frozen=True, slots=True)
class Ours:
    spark: Any
    s3: EmbeddedS3Server
    parallelism: int
    batch_size: int
    """Records per source batch in W1 and W3v (vectorised)."""
    record_batch_size: int
    """Records per source batch in W2 and W3 (per record), as the Bytewax peer reads them."""
    work: pathlib.Path
    sink_timeline: bool = False
    """W1 and W2: the result also holds the sink's ``(time, records)`` of every write."""

    def run(
        self, workload: str, dataset: data.DataSet, *, interval: float | None
    ) -> dict[str, Any]:
        """One run; ``interval=None``: no periodic checkpoints."""
        name = f"{workload}-{'cp' if interval else 'nocp'}-{uuid.uuid4().hex[:8]}"
        output = self.work / f"out-{name}"
        kind = FILE_WORKLOADS[workload]
        source = dataset.jsonl if kind.json_lines else dataset.parquet
        args = ["--workload", workload, "--input", str(source), "--output", str(output)]
        batch = self.batch_size if kind.vectorised else self.record_batch_size
        args += ["--keys", str(dataset.keys), "--batch-size", str(batch)]
        if self.sink_timeline:
            args.append("--timeline")
        spec = ours.job_spec(
            PIPELINE,
            args,
            s3=self.s3,
            prefix=f"suite/{name}",
            parallelism=self.parallelism,
            checkpoint=ours.checkpoints(interval or None),
            restart=ours.no_restarts(Backoff(initial=0.2, max=1.0)),
        )
        load_before = machine.loadavg()
        jvm = machine.jvm_pid()
        cpu_before = machine.cpu_seconds(jvm), machine.self_cpu_seconds()
        started = time.time()
        job = driver.SparkDriver(spec, session=self.spark)
        result = job.run()
        ended = time.time()
        wall = ended - started
        periodic, history = checkpoint_counts.periodic(
            job.job.checkpoint_stats(), result.final_checkpoint
        )
        out: dict[str, Any] = {
            "system": "ours",
            "variant": "checkpoints_1s" if interval else "no_periodic_checkpoints",
            "wall_seconds": round(wall, 3),
            "events_per_second": round(dataset.events / wall),
            "attempts": result.attempts,
            "periodic_checkpoints_completed": periodic,
            "checkpoint_seconds_median": _median([e.duration for e in history]),
            "checkpoint_seconds_median_of": len(history),
            "driver_jvm_cpu_seconds": _delta(
                (machine.cpu_seconds(jvm), machine.self_cpu_seconds()), cpu_before
            ),
            "loadavg_before": load_before,
            "loadavg_after": machine.loadavg(),
        }
        if kind.json_lines:
            got = answers.from_jsonl_files(output, dataset.keys, value="count")
        else:
            got, window = _last_values(output, dataset.keys)
            out |= window
        out["correct"] = answers.check(got, dataset.expected(workload))
        return out


def _last_values(output: pathlib.Path, keys: int) -> tuple[np.ndarray, dict[str, Any]]:
    got = np.full(keys, -1, dtype=np.int64)
    marks = [json.loads(p.read_text()) for p in output.glob("*.json")]
    for m in marks:
        got[np.asarray(m["keys"], dtype=np.int64)] = np.asarray(m["values"], dtype=np.int64)
    firsts = [m["first"] for m in marks if m["first"] is not None]
    lasts = [m["last"] for m in marks if m["last"] is not None]
    records = sum(m["records"] for m in marks)
    window: dict[str, Any] = {"sink_records": records}
    if any("timeline" in m for m in marks):
        window["sink_timeline"] = sorted(tuple(w) for m in marks for w in m.get("timeline", ()))
    if firsts and lasts and max(lasts) > min(firsts):
        seconds = max(lasts) - min(firsts)
        window |= {
            "processing_window_seconds": round(seconds, 3),
            "processing_window_definition": "first to last write at the sink (excludes start-up and the final checkpoint)",
        }
    return got, window


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(float(np.median(present)), 4) if present else None


def _delta(after: tuple[float | None, float], before: tuple[float | None, float]) -> float | None:
    if after[0] is None or before[0] is None:
        return None
    return round(after[0] - before[0] + after[1] - before[1], 3)
