"""W3 and W3v: JSON lines → filter → keyed count → file sink, per record and with batch functions.

Input: the suite's events as JSON lines (:func:`.data.generate`). Ours
(:mod:`.files_pipeline`): W3 ``FileSource`` (fields ``key`` and ``kind``
declared) → ``filter(kind == "buy")`` → ``key_by(lambda r: r["key"])`` →
``stateful_map`` count → ``FileSink``; W3v the same records out, written
with batch functions: ``map_batches`` (the ``buy`` events as ``{key, count:
1}``) → ``key_by("by-key", "key")`` → ``sum``. Spark SS: ``readStream.json``
(schema given) → ``filter(kind = "buy")`` → ``groupBy("key").count()``; the
peers run W3 for W3v. Bytewax: W3 with ``map(json.loads)`` → ``filter`` →
``stateful_map``. The answer: every key's count of ``buy`` events.
"""

from __future__ import annotations

from cjob_bench.workloads import spec

W3 = spec.FileWorkload(
    name="W3",
    summary="JSON lines -> filter -> keyed count -> file sink, per-record functions",
    json_lines=True,
    vectorised=False,
    value="count",
    peers_run="W3",
    bytewax=True,
    long_runs=False,
)
W3V = spec.FileWorkload(
    name="W3v",
    summary="W3 written with batch functions (the peers run their W3)",
    json_lines=True,
    vectorised=True,
    value="count",
    peers_run="W3",
    bytewax=False,
    long_runs=False,
)
