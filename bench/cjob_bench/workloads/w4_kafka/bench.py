"""The W4-on-Kafka sweep: rates x interleaved repeats x systems, then profile runs of ours.

Before the sweep one short unmeasured run warms our SparkSession (its workers' imports, the
JIT of its JVM), as every Spark peer run is a fresh process whose cold start the warm-up
seconds of each run absorb. At each rate, repeat ``r`` runs the systems still in the race in an order rotated by ``r``
(ABCD, BCDA, CDAB, …), so slow drifts of this shared machine spread over all of them. A
system that did not keep up with a rate (majority of its repeats) is not run at higher rates.
After the sweep, ``profile_rate`` adds one probe run per mode of ours (``t_map`` stamped at
the map step) whose breakdown says where our time goes; probe runs are left out of the
medians.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from cjob_bench.harness import runs as harness
from cjob_bench.workloads.w4_kafka import ours, report, runs

log = harness.logger("w4kafka")


def sweep(
    settings: runs.Settings,
    rates: Sequence[float],
    repeats: int,
    systems: Sequence[str],
    broker: runs.Broker,
    runner: ours.OursRunner | None,
    *,
    table_rate: float | None = None,
    table_repeats: int = 3,
    profile_rate: float | None = None,
    run: Callable[..., dict[str, Any]] = runs.run,
) -> list[dict[str, Any]]:
    """Every run's figures (failed runs as ``{"error": ...}``); see the module docstring.

    ``table_rate`` (the README table's rate) gets at least ``table_repeats`` repeats."""
    results: list[dict[str, Any]] = []
    active = list(systems)
    if runner is not None and rates:
        warm = dataclasses.replace(settings, seconds=min(5.0, settings.seconds), warmup=0.0)
        ours_first = next(s for s in systems if s.startswith("ours-"))
        _one(run, ours_first, rates[0], -1, warm, broker, runner, False)
    for rate in rates:
        n = max(repeats, table_repeats) if rate == table_rate else repeats
        for r in range(n):
            for system in harness.rotated(active, r):
                results.append(_one(run, system, rate, r, settings, broker, runner, False))
        summary = report.summarise(results)
        active = [s for s in active if summary[s][report._rate_key(rate)]["kept_up"]]
        if not active:
            break
    if profile_rate is not None:
        for system in [s for s in systems if s.startswith("ours-")]:
            results.append(_one(run, system, profile_rate, 0, settings, broker, runner, True))
    return results


def _one(
    run: Callable[..., dict[str, Any]],
    system: str,
    rate: float,
    repeat: int,
    settings: runs.Settings,
    broker: runs.Broker,
    runner: ours.OursRunner | None,
    probe: bool,
) -> dict[str, Any]:
    label = f"{system} at {rate:g}/s, repeat {repeat}{' (probe)' if probe else ''}"
    log(f"{label} ...")
    try:
        out = run(system, rate, settings, broker, runner, probe=probe)
    except Exception as exc:  # one failed run is a finding, not the end of the sweep
        log(f"{label}: FAILED {exc}")
        return {"system": system, "rate": rate, "repeat": repeat, "probe": probe, "error": str(exc)}
    out["repeat"] = repeat
    lat = out["latency_ms"]
    log(
        f"{label}: p50 {lat['p50']} p99 {lat['p99']} p99.9 {lat['p99_9']} ms, "
        f"lost {out['lost']}, dup {out['duplicates']}, kept up {out['kept_up']}"
    )
    return out
