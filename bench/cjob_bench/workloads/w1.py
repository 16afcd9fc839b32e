"""W1, a vectorised keyed sum: the throughput of our batch path against Spark SS.

Input: the suite's events as Parquet (:func:`.data.generate`). Ours
(:mod:`.files_pipeline`, ``--workload W1``): ``FileSource`` → ``key_by("by-key",
"key")`` → ``sum("sum", "value")`` (vectorised) → a sink keeping each key's
latest sum. Spark SS (:mod:`cjob_bench.peers.spark.files`): ``readStream.parquet``
→ ``groupBy("key").agg(sum("value"))``. No Bytewax flow. The answer: every
key's sum of ``value``. ``run recovery`` also runs W1, over generated events
in the job, to time recovery.
"""

from __future__ import annotations

from cjob_bench.workloads import spec

WORKLOAD = spec.FileWorkload(
    name="W1",
    summary="vectorised keyed sum over Parquet files",
    json_lines=False,
    vectorised=True,
    value="sum",
    peers_run="W1",
    bytewax=False,
    long_runs=True,
)
