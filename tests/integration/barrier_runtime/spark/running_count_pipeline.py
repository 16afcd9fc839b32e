"""The demo's keyed running count (``barrier_runtime.demo``) as a pipeline *file*.

The Spark driver and every worker load this file by path and call
``build_flow`` with the same arguments (``--out URL --keys N --events-per-key M
--partitions 6 --batch-size 100 --rate TOTAL_EVENTS_PER_S``), which exercises
loading a pipeline by file rather than by module name.
"""

from __future__ import annotations

from barrier_runtime.demo import build_flow

__all__ = ["build_flow"]
