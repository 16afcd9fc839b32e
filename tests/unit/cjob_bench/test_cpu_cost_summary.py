"""The checkpoint-cost figures (cjob_bench.nexmark.cpu_cost.summarise) over several intervals."""

from __future__ import annotations

from typing import Any

from cjob_bench.nexmark import cpu_cost


def _run(variant: str, cpu: float, wall: float, *, equal: bool = True) -> dict[str, Any]:
    by_kind = {k: cpu / len(cpu_cost.KINDS) for k in cpu_cost.KINDS}
    return {
        "variant": variant,
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "cpu_seconds_per_million_events": cpu,
        "cpu_seconds_per_million_events_by_kind": by_kind,
        "checkpoints_completed": 3,
        "correct": {"equal": equal},
    }


def test_each_interval_is_compared_with_the_run_without_periodic_checkpoints() -> None:
    fast, slow, none = cpu_cost.variant(0.1), cpu_cost.variant(1.0), cpu_cost.WITHOUT
    runs = [
        _run(none, 10.0, 20.0),
        _run(none, 11.0, 21.0),
        _run(none, 99.0, 99.0, equal=False),  # a wrong run is left out
        _run(slow, 10.2, 20.0),
        _run(slow, 10.4, 22.0),
        _run(fast, 12.0, 25.0),
        {"variant": fast, "error": "crashed"},  # so is a failed one
        _run(fast, 13.0, 26.0),
    ]
    medians = cpu_cost.summarise(runs)
    assert medians[none]["runs"] == medians[slow]["runs"] == medians[fast]["runs"] == 2
    assert medians[none]["cpu_seconds_per_million_events"] == 10.5
    overheads = medians["overheads"]
    assert set(overheads) == {slow, fast}
    assert overheads[slow]["cpu_overhead"] == round(10.3 / 10.5 - 1, 4)
    assert overheads[fast]["cpu_overhead"] == round(12.5 / 10.5 - 1, 4)
    assert overheads[fast]["wall_overhead"] == round(25.5 / 20.5 - 1, 4)
    by_kind = overheads[fast]["cpu_overhead_by_kind_seconds_per_million_events"]
    assert by_kind == {k: round((12.5 - 10.5) / len(cpu_cost.KINDS), 3) for k in cpu_cost.KINDS}


def test_without_the_baseline_there_is_no_overhead() -> None:
    medians = cpu_cost.summarise([_run(cpu_cost.WITH, 10.0, 20.0)])
    assert medians[cpu_cost.WITH]["runs"] == 1
    assert "overheads" not in medians
