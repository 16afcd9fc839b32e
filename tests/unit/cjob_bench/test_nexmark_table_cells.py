"""How the README's Nexmark table shows a search that did not end cleanly."""

from __future__ import annotations

from cjob_bench.nexmark import table
from cjob_bench.nexmark.kafka import method


def _trial(rate: int, sustained: bool, *, feed_kept: bool = True) -> dict[str, object]:
    checks = {"bounded_lag": sustained, "feed_kept_schedule": feed_kept}
    return {"rate": rate, "verdict": {"sustained": sustained, "checks": checks}}


def _row(ours: dict[str, object], spark: dict[str, object]) -> str:
    doc = {"sustain": {"q5": {"ours": ours, "spark": spark}}, "cpu": {}}
    return table.markdown(table.rows(doc)).splitlines()[2]


def test_a_search_that_crashed_shows_what_it_sustained_and_where_it_crashed() -> None:
    trials = [_trial(40_000, True), _trial(80_000, True), _trial(160_000, False, feed_kept=False)]
    ours = method.searched(trials, 0.1) | {"crashed": {"rate": 120_000, "error": "boom"}}
    spark = method.searched([_trial(20_000, True), _trial(21_000, False)], 0.1)
    assert _row(ours, spark).startswith(
        "| q5 | ≥ 80,000 (feed) (crashed at 120,000) | 20,000 | 4.00x |"
    )


def test_a_rate_whose_next_step_the_feed_could_not_send_is_marked() -> None:
    trials = [_trial(100_000, True), _trial(105_000, False, feed_kept=False)]
    found = method.searched(trials, 0.1)
    assert found["resolved"] is True and found["limited_by_feed"] is True
    assert _row(found, {"crashed": {"rate": 80_000, "error": "JVM"}}).startswith(
        "| q5 | ≥ 100,000 (feed) | — (crashed at 80,000) | — |"
    )
