"""The method, decided before measuring: when a rate is sustained, how the search goes, what latency is.

**Sustained.** A run at rate R lasts ``seconds`` (>= 60 for a reported figure) of live input
(:mod:`.feed`). The job's *input lag* is sampled every second (:class:`.run.LagSampler`):
records in the input topics the query reads (broker high watermarks) minus records its
sources have read (the runtime's counters). R is sustained when all of these hold:

* bounded: the lag at the end of the input is at most the lag at ``warm`` s (20 s; a third
  of the run when shorter) plus one checkpoint interval's worth of input (``R * interval``);
* no growth trend: the least-squares slope of the lag from ``warm`` s to the end, times that
  span, is at most one interval's worth too;
* every output committed: the job stopped with a savepoint and the ``read_committed`` watch
  read exactly as many records as the sink step took in (exactly-once: none lost, none twice);
* the feed kept its schedule (fell behind by at most :data:`FEED_SLACK_MS`): otherwise R
  was not offered and the run says so (``feed_fell_behind``), which counts as not sustained.

**Search.** From ``start`` the rate doubles while sustained (up to ``ceiling``); then
bisection between the highest sustained and the lowest not sustained rate, until they are
within ``tolerance`` (10 %) of each other. The highest sustained rate and every trial's lag
series are reported.

**Latency to visible output**, measured at half the sustainable rate: per output record,
from the creation time of the newest input it depends on, to the instant the
``read_committed`` watch received it (after its transaction committed). The creation time is
the feed's wall clock when it handed that input to Kafka (its Kafka timestamp): for q0, q1,
q2 the bid itself; for windowed queries the window's end, i.e. the newest event of the
window (event time ``window_end - 1`` ms). Both are read off the feed's clock
(:mod:`.feed`: the wall time the newest event of each event-time millisecond was sent;
event time runs at the wall clock's speed, so its resolution is 1 ms). Records whose inputs
are in the first ``warmup`` s are not measured. Also the *latency to the sink, before
commit*: to the sink writer's write time (``_written_us``), which no reader can see yet.
p50, p99 and max, in ms.

**Known limits**, seen in the first runs (2026-11-28, q1, on the shared 2-core machine at a
load average of 8-21): the job's read count comes from the runtime's counters, which the
workers report on their heartbeat, so one sample can be off by a heartbeat's worth of input
and the series is jagged (at 5,000 events/s it went between 0 and 6,000); and a run that
falls far behind early and catches up before the end (16,250 events/s: 114,000 records
behind at 20 s, 140,000 at 30 s, 8,000 at the end) passes both lag tests. Neither is changed
here, after measuring: a next revision could compare medians of a few samples and bound
the lag itself (e.g. at most a few seconds of input), as W4's consumer bounds latency.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

FEED_SLACK_MS = 1000.0
WARM_SECONDS = 20.0


def verdict(raw: dict[str, Any], warm: float = WARM_SECONDS) -> dict[str, Any]:
    """Whether the run of ``raw`` (:func:`.run.run`) sustained its rate, and why."""
    rate, interval, seconds = raw["rate"], raw["interval"], raw["seconds"]
    warm = min(warm, seconds / 3)
    during = [p for p in raw["lag_series"] if p["t"] <= seconds + 0.5]
    allowance = rate * interval
    at_warm = min(during, key=lambda p: abs(p["t"] - warm))["lag"] if during else 0
    at_end = during[-1]["lag"] if during else 0
    late = [p for p in during if p["t"] >= warm]
    growth = 0.0
    if len(late) >= 3:
        t = np.array([p["t"] for p in late])
        slope = float(np.polyfit(t, np.array([p["lag"] for p in late], float), 1)[0])
        growth = slope * (t[-1] - t[0])
    seen = int(raw["watch"].get("records", -1))
    checks = {
        "bounded": at_end <= at_warm + allowance,
        "no_growth_trend": bool(growth <= allowance),
        "every_output_committed": bool(raw["watch"].get("drained"))
        and seen == raw["sink_records_in"],
        "feed_kept_schedule": raw["feed"].get("max_behind_schedule_ms", 0) <= FEED_SLACK_MS,
    }
    return {
        "sustained": all(checks.values()),
        "checks": checks,
        "lag_at_warm": at_warm,
        "lag_at_end": at_end,
        "lag_growth_over_trend": round(growth),
        "allowance": allowance,
        "warm_seconds": warm,
        "max_lag": max((p["lag"] for p in during), default=0),
        "output_records": seen,
        "sink_records_in": raw["sink_records_in"],
    }


def search(
    trial: Callable[[int], bool], start: int, *, ceiling: int, tolerance: float = 0.1
) -> tuple[int | None, list[int]]:
    """Highest sustained rate by doubling then bisection; also the rates tried, in order.

    >>> search(lambda r: r <= 7_000, 1_000, ceiling=100_000, tolerance=0.1)
    (7000, [1000, 2000, 4000, 8000, 6000, 7000, 7500])
    """
    tried: list[int] = []
    best: int | None = None
    rate = start
    failed: int | None = None
    while rate <= ceiling:
        tried.append(rate)
        if not trial(rate):
            failed = rate
            break
        best, rate = rate, rate * 2
    if best is None or failed is None:
        return best, tried
    low, high = best, failed
    while (high - low) > tolerance * low:
        mid = (low + high) // 2
        tried.append(mid)
        if trial(mid):
            low = mid
        else:
            high = mid
    return low, tried


def latency(raw: dict[str, Any], base_time_ms: int, warmup: float) -> dict[str, Any]:
    """Latency to visible output and to the sink (before commit), ms (see the docstring)."""
    arrays, clock = raw["arrays"], raw["clock"]
    at = arrays["event_time_ms"] - base_time_ms
    known = (arrays["event_time_ms"] >= 0) & (at >= warmup * 1000) & (at < len(clock))
    created = clock[np.clip(at, 0, len(clock) - 1)]
    known &= created >= 0
    visible = (arrays["visible_us"] - created)[known] / 1000.0
    written = arrays["written_us"]
    to_sink = (written - created)[known & (written >= 0)] / 1000.0
    return {
        "records": len(at),
        "measured": int(known.sum()),
        "not_measured": "results of q3 and q4 carry no time"
        if raw["query"] in ("q3", "q4")
        else None,
        "visible_ms": quantiles(visible),
        "sink_before_commit_ms": quantiles(to_sink),
    }


def quantiles(values: np.ndarray) -> dict[str, float | None]:
    if not len(values):
        return {"p50": None, "p99": None, "max": None}
    q = np.quantile(values, [0.5, 0.99])
    top = float(values.max())
    return {"p50": round(float(q[0]), 1), "p99": round(float(q[1]), 1), "max": round(top, 1)}
