"""What a file workload is: the facts every system's runner needs about W1, W2, W3 or W3v.

One value per workload (:mod:`.w1`, :mod:`.w2`, :mod:`.w3`), read by ours
(:mod:`.files_ours`), the Spark peer (:mod:`cjob_bench.peers.spark.files`),
the Bytewax peer (:mod:`cjob_bench.peers.bytewax`) and the suite
(:mod:`.files`) instead of each testing the workload's name.
"""

from __future__ import annotations

import dataclasses
from typing import Literal


@dataclasses.dataclass(frozen=True, slots=True)
class FileWorkload:
    """One workload over the suite's generated files (:func:`cjob_bench.workloads.data.generate`)."""

    name: str
    summary: str
    json_lines: bool
    """Reads the JSON-lines copy of the events (else the Parquet one)."""
    vectorised: bool
    """Written with batch functions: our source reads ``--batch-size`` records a batch (else
    ``--record-batch-size``, as the Bytewax peer reads them)."""
    value: Literal["sum", "count"]
    """The column of its per-key answer: the running sum of ``value``, or a count."""
    peers_run: str
    """The workload the peers run for it (W3v is W3 written with batch functions)."""
    bytewax: bool
    """Whether the Bytewax peer has a flow for it."""
    long_runs: bool
    """Whether ``--long`` and the simultaneous mode measure its checkpoint overhead."""
