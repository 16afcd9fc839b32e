"""W2, a per-record keyed running count with a Python function: our per-record path.

Input: the suite's events as Parquet (:func:`.data.generate`). Ours
(:mod:`.files_pipeline`, ``--workload W2``): ``FileSource`` →
``key_by(lambda r: r["key"])`` → ``stateful_map`` running count (a Python
function per record) → a sink keeping each key's latest count. Spark SS:
``groupBy("key").count()`` (vectorised; Spark has no per-record Python state
on this path). Bytewax (:mod:`cjob_bench.peers.bytewax_flow`): ``key_on`` →
``stateful_map`` count, two processes, recovery every 1 s. The answer: every
key's count.
"""

from __future__ import annotations

from cjob_bench.workloads import spec

WORKLOAD = spec.FileWorkload(
    name="W2",
    summary="per-record keyed running count (Python function) over Parquet",
    json_lines=False,
    vectorised=False,
    value="count",
    peers_run="W2",
    bytewax=True,
    long_runs=True,
)
