"""Summaries of W4-on-Kafka runs: medians over repeats, spread, max rate kept up, README table.

>>> runs = [
...     {"system": "ours-aligned", "rate": 1000.0, "kept_up": True, "lost": 0, "duplicates": 0,
...      "latency_ms": {"p50": p, "p99": 2 * p, "p99_9": 3 * p, "max": 4 * p}}
...     for p in (10.0, 30.0, 20.0)
... ]
>>> cell = summarise(runs)["ours-aligned"]["1000"]
>>> cell["latency_ms_median"]["p99"], cell["latency_ms_spread"]["p99"]
(40.0, [20.0, 60.0])
>>> max_rate_kept_up(summarise(runs))
{'ours-aligned': 1000.0}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

QUANTILES = ("p50", "p99", "p99_9")
LABELS = {
    "ours-aligned": "ours, aligned (exactly-once)",
    "ours-unaligned": "ours, unaligned (exactly-once)",
    "spark-real-time": "Spark real-time mode (at-least-once)",
    "spark-micro-batch": "Spark micro-batch 1 s (at-least-once)",
}


def summarise(runs: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per system and rate: median and [min, max] of each quantile over the repeats."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for run in runs:
        if run.get("probe"):
            continue
        cell = out.setdefault(run["system"], {}).setdefault(_rate_key(run["rate"]), {"runs": []})
        cell["runs"].append(run)
    for per_rate in out.values():
        for cell in per_rate.values():
            every = cell.pop("runs")
            done = [r for r in every if "latency_ms" in r]
            cell["repeats"] = len(done)
            cell["errors"] = len(every) - len(done)
            cell["kept_up"] = bool(done) and 2 * sum(bool(r["kept_up"]) for r in done) > len(done)
            cell["lost_total"] = sum(int(r["lost"]) for r in done)
            cell["duplicates_total"] = sum(int(r["duplicates"]) for r in done)
            cell["latency_ms_median"] = {}
            cell["latency_ms_spread"] = {}
            for q in QUANTILES:
                values = [r["latency_ms"][q] for r in done if r["latency_ms"][q] is not None]
                cell["latency_ms_median"][q] = (
                    round(float(np.median(values)), 2) if values else None
                )
                cell["latency_ms_spread"][q] = [min(values), max(values)] if values else None
    return out


def max_rate_kept_up(summary: dict[str, dict[str, dict[str, Any]]]) -> dict[str, float | None]:
    """The highest rate each system kept up with (majority of its repeats)."""
    return {
        system: max((float(rate) for rate, c in per_rate.items() if c["kept_up"]), default=None)
        for system, per_rate in summary.items()
    }


def markdown_table(summary: dict[str, dict[str, dict[str, Any]]], systems: Sequence[str]) -> str:
    """Rate rows, one column per system: median p50 / p99 / p99.9 in ms ("—": not run)."""
    rates = sorted({float(r) for per_rate in summary.values() for r in per_rate})
    head = "| events/s | " + " | ".join(LABELS.get(s, s) for s in systems) + " |"
    lines = [head, "|---:|" + "---|" * len(systems)]
    for rate in rates:
        cells = []
        for system in systems:
            cell = summary.get(system, {}).get(_rate_key(rate))
            if cell is None or cell["latency_ms_median"]["p50"] is None:
                cells.append("—")
                continue
            m = cell["latency_ms_median"]
            text = " / ".join(_fmt(m[q]) for q in QUANTILES)
            if not cell["kept_up"]:
                text += " (fell behind)"
            if cell["repeats"] > 1:
                text += f" x{cell['repeats']}"
            cells.append(text)
        lines.append(f"| {rate:,.0f} | " + " | ".join(cells) + " |")
    kept = max_rate_kept_up(summary)
    lines.append(
        "| max kept up | "
        + " | ".join("—" if kept.get(s) is None else f"{kept[s]:,.0f}" for s in systems)
        + " |"
    )
    return "\n".join(lines)


def _fmt(ms: float | None) -> str:
    if ms is None:
        return "?"
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.1f}"


def _rate_key(rate: float) -> str:
    return f"{rate:g}"
