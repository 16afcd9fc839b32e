"""Medians of interleaved repeats, ratios within the run, checkpoint overhead, and the table.

>>> runs = [{"events_per_second": 10, "wall_seconds": 2.0, "correct": {"equal": True}},
...         {"events_per_second": 30, "wall_seconds": 1.0, "correct": {"equal": True}}]
>>> summarize(runs)["events_per_second_median"]
20.0
>>> overhead({"events_per_second_median": 97.0}, {"events_per_second_median": 100.0})
0.03
>>> paired_overheads([{"events_per_second": 97}, {"error": "x"}], [{"events_per_second": 100}] * 2)
[0.03]
"""

from __future__ import annotations

import statistics
from typing import Any

OURS = "ours/checkpoints_1s"


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in runs if "error" not in r]
    out: dict[str, Any] = {
        "runs": len(runs),
        "failed_runs": len(runs) - len(ok),
        "all_correct": bool(ok) and all(r["correct"]["equal"] for r in ok),
    }
    if ok:
        out["events_per_second_median"] = statistics.median(r["events_per_second"] for r in ok)
        out["wall_seconds_median"] = round(statistics.median(r["wall_seconds"] for r in ok), 3)
        windows = [r["processing_window_seconds"] for r in ok if r.get("processing_window_seconds")]
        if windows:
            out["processing_window_seconds_median"] = round(statistics.median(windows), 3)
    return out


def overhead(with_cp: dict[str, Any], without: dict[str, Any]) -> float | None:
    """1 - with / without, on median end-to-end events/s."""
    a, b = with_cp.get("events_per_second_median"), without.get("events_per_second_median")
    return round(1 - a / b, 4) if a and b else None


def paired_overheads(with_cp: list[dict[str, Any]], without: list[dict[str, Any]]) -> list[float]:
    """1 - with / without for each repeat: the two runs of a repeat ran back to back,
    so a drift of the machine over the repeats cancels within a pair."""
    return [
        round(1 - a["events_per_second"] / b["events_per_second"], 4)
        for a, b in zip(with_cp, without, strict=True)
        if "error" not in a and "error" not in b
    ]


def ratios(systems: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Ours (with checkpoints every 1 s) / each other system, on median end-to-end events/s."""
    ours = systems.get(OURS, {}).get("events_per_second_median")
    out = {}
    for name, s in systems.items():
        theirs = s.get("events_per_second_median")
        if not name.startswith("ours/") and ours and theirs:
            out[f"ours_over_{name.replace('/', '_')}"] = round(ours / theirs, 3)
    return out


def table(workloads: dict[str, Any]) -> str:
    head = f"{'workload':8} {'system/variant':40} {'events/s':>11} {'wall s':>8} {'window s':>9} {'ok':>4}"
    lines = [head, "-" * len(head)]
    for name, w in workloads.items():
        for system, s in w.get("systems", {}).items():
            eps = s.get("events_per_second_median")
            lines.append(
                f"{name:8} {system:40} {eps if eps is not None else '-':>11} "
                f"{s.get('wall_seconds_median', '-'):>8} {s.get('processing_window_seconds_median', '-'):>9} "
                f"{'yes' if s['all_correct'] else 'NO':>4}"
            )
        if w.get("checkpoint_overhead") is not None:
            lines.append(
                f"{name:8} checkpoint overhead (1 - with/without): {w['checkpoint_overhead']:.1%}"
            )
        if w.get("checkpoint_overhead_per_repeat"):
            pairs = ", ".join(f"{o:.1%}" for o in w["checkpoint_overhead_per_repeat"])
            lines.append(
                f"{name:8} per repeat: {pairs}; median {w['checkpoint_overhead_median_of_repeats']:.1%}"
            )
        for k, v in w.get("ratios", {}).items():
            lines.append(f"{name:8} {k}: {v}")
    return "\n".join(lines)
