"""Window latency: from the moment a system has read every event of a window to its result.

A window ``[start, end)`` is complete for a system once it has read the last
batch that holds one of its events; a watermark cannot pass ``end`` earlier.
So the latency of a result is its arrival time at the sink minus the read
time of the last batch whose earliest event time is before ``end``: the wait
for the watermark (its bound, and the slowest partition) plus firing and
delivery. Both systems are measured this way, each from its own read times
(our source's batches, Spark's micro-batches).

>>> t = completion_times(np.array([10.0, 11.0, 12.0]), np.array([0, 50, 120]))
>>> t(np.array([40, 100, 200])).tolist()
[10.0, 11.0, 12.0]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

Times = npt.NDArray[np.float64]
Ms = npt.NDArray[np.int64]


def completion_times(read_at: Times, earliest_ts: Ms) -> Callable[[Ms], Times]:
    """For window ends, the wall time the last batch holding an earlier event was read.

    ``read_at[i]``, ``earliest_ts[i]``: when batch ``i`` was read, its smallest event time.
    """
    order = np.argsort(earliest_ts, kind="stable")
    sorted_ts = earliest_ts[order]
    latest = np.maximum.accumulate(read_at[order])

    def at(ends: Ms) -> Times:
        index = np.searchsorted(sorted_ts, ends, side="left") - 1
        out = np.full(len(ends), np.nan)
        known = index >= 0
        out[known] = latest[index[known]]
        return out

    return at


def quantiles_ms(latencies_s: Times) -> dict[str, float | None]:
    values = latencies_s[~np.isnan(latencies_s)]
    if not len(values):
        return {"p50": None, "p99": None, "max": None}
    p50, p99 = np.quantile(values, [0.5, 0.99])
    return {
        "p50": round(float(p50) * 1000, 1),
        "p99": round(float(p99) * 1000, 1),
        "max": round(float(values.max()) * 1000, 1),
    }
