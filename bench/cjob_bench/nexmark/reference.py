"""The oracle: each Nexmark query evaluated in one batch over all the events, in plain Python.

No streaming, no watermarks, no state: the definitions of :mod:`.queries` and
:mod:`.queries_windowed` written as directly as possible (dicts, sorting,
grouping), so that a streaming result can be checked against them.
:func:`same` compares as a multiset of rows over the oracle's fields (every
query's output order depends on the parallelism), except q4, whose stream of
running averages is checked by its final value per category.

>>> events = {"bids": pa.table({"auction": [1000, 1108], "bidder": [1, 2], "price": [5, 7],
...                              "dateTime": [0, 10_500], "extra": ["", ""]})}
>>> expected("q2", events)
[]
>>> [r["bid_count"] for r in expected("q11", events)]
[1, 1]
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pyarrow as pa

from cjob_bench.nexmark import queries_windowed as windowed

Row = dict[str, Any]
Events = Mapping[str, pa.Table]
EURO_RATE, Q2_SKIP, Q3_CATEGORY, Q3_STATES = 0.908, 123, 10, ("OR", "ID", "CA")
WINDOW_MS, HOP_MS = windowed.WINDOW_MS, windowed.HOP_MS


def q0(events: Events) -> list[Row]:
    return list(events["bids"].to_pylist())


def q1(events: Events) -> list[Row]:
    return [{**b, "price": b["price"] * EURO_RATE} for b in events["bids"].to_pylist()]


def q2(events: Events) -> list[Row]:
    return [
        {"auction": b["auction"], "price": b["price"]}
        for b in events["bids"].to_pylist()
        if b["auction"] % Q2_SKIP == 0
    ]


def q3(events: Events) -> list[Row]:
    people = {p["id"]: p for p in events["persons"].to_pylist() if p["state"] in Q3_STATES}
    return [
        {"name": p["name"], "city": p["city"], "state": p["state"], "id": a["id"]}
        for a in events["auctions"].to_pylist()
        if a["category"] == Q3_CATEGORY and (p := people.get(a["seller"])) is not None
    ]


def q4(events: Events) -> list[Row]:
    """Per category: the average of its auctions' winning prices, and how many auctions won."""
    auctions = {a["id"]: a for a in events["auctions"].to_pylist()}
    best: dict[int, int] = {}
    for b in events["bids"].to_pylist():
        a = auctions.get(b["auction"])
        if a is not None and a["dateTime"] <= b["dateTime"] <= a["expires"]:
            best[a["id"]] = max(best.get(a["id"], b["price"]), b["price"])
    finals: dict[int, list[int]] = collections.defaultdict(list)
    for auction, price in best.items():
        finals[auctions[auction]["category"]].append(price)
    return [{"category": c, "avg": sum(p) / len(p), "auctions": len(p)} for c, p in finals.items()]


def q5(events: Events) -> list[Row]:
    counts: collections.Counter[tuple[int, int]] = collections.Counter()
    for b in events["bids"].to_pylist():
        last = b["dateTime"] - b["dateTime"] % HOP_MS
        for start in range(last - WINDOW_MS + HOP_MS, last + 1, HOP_MS):
            counts[(start, b["auction"])] += 1
    most: dict[int, int] = {}
    for (start, _), n in counts.items():
        most[start] = max(most.get(start, 0), n)
    return [
        {"auction": a, "num": n, "window_start": s, "window_end": s + WINDOW_MS}
        for (s, a), n in counts.items()
        if n == most[s]
    ]


def q7(events: Events) -> list[Row]:
    windows: dict[int, list[Row]] = collections.defaultdict(list)
    for b in events["bids"].to_pylist():
        windows[b["dateTime"] // WINDOW_MS].append(b)
    rows = []
    for bids in windows.values():
        highest = max(b["price"] for b in bids)
        rows += [b for b in bids if b["price"] == highest]
    return rows


def q8(events: Events) -> list[Row]:
    sold = {(a["seller"], a["dateTime"] // WINDOW_MS) for a in events["auctions"].to_pylist()}
    return [
        {"id": p["id"], "name": p["name"], "starttime": p["dateTime"] // WINDOW_MS * WINDOW_MS}
        for p in events["persons"].to_pylist()
        if (p["id"], p["dateTime"] // WINDOW_MS) in sold
    ]


def q11(events: Events) -> list[Row]:
    """Sessions: a bidder's bids less than or exactly the gap apart (windows that touch merge)."""
    times: dict[int, list[int]] = collections.defaultdict(list)
    for b in events["bids"].to_pylist():
        times[b["bidder"]].append(b["dateTime"])
    rows = []
    for bidder, ts in times.items():
        ts.sort()
        start = prev = ts[0]
        n = 0
        for t in [*ts, None]:
            if t is None or t - prev > WINDOW_MS:
                rows.append(
                    {
                        "bidder": bidder,
                        "bid_count": n,
                        "window_start": start,
                        "window_end": prev + WINDOW_MS,
                    }
                )
                if t is None:
                    break
                start, n = t, 0
            prev, n = t, n + 1
    return rows


def q12(events: Events) -> list[Row]:
    counts = collections.Counter(
        (b["bidder"], b["dateTime"] // WINDOW_MS) for b in events["bids"].to_pylist()
    )
    return [
        {
            "bidder": bidder,
            "bid_count": n,
            "window_start": w * WINDOW_MS,
            "window_end": (w + 1) * WINDOW_MS,
        }
        for (bidder, w), n in counts.items()
    ]


ORACLES: dict[str, Callable[[Events], list[Row]]] = {
    "q0": q0, "q1": q1, "q2": q2, "q3": q3, "q4": q4,
    "q5": q5, "q7": q7, "q8": q8, "q11": q11, "q12": q12,
}  # fmt: skip


def expected(query: str, events: Events) -> list[Row]:
    """The rows ``query`` must produce over ``events`` (tables by kind)."""
    return ORACLES[query](events)


def _canonical(rows: Iterable[Row], fields: list[str]) -> collections.Counter[tuple[Any, ...]]:
    return collections.Counter(tuple(r.get(f) for f in fields) for r in rows)


def final_per_category(rows: Iterable[Row]) -> list[Row]:
    """q4's stream of running averages: each category's last one (the one with most auctions)."""
    last: dict[int, Row] = {}
    for r in rows:
        if r["category"] not in last or r["auctions"] > last[r["category"]]["auctions"]:
            last[r["category"]] = {k: r[k] for k in ("category", "avg", "auctions")}
    return list(last.values())


def same(query: str, got: Iterable[Row], want: list[Row]) -> tuple[bool, str]:
    """Whether ``got`` (a streaming run's output) equals the oracle's rows; why not, if not."""
    got = final_per_category(got) if query == "q4" else list(got)
    fields = sorted(want[0]) if want else sorted(got[0]) if got else []
    g, w = _canonical(got, fields), _canonical(want, fields)
    if g == w:
        return True, f"{sum(w.values())} rows equal"
    missing, extra = w - g, g - w
    return False, (
        f"{sum(missing.values())} rows missing (e.g. {list(missing)[:2]}), "
        f"{sum(extra.values())} unexpected (e.g. {list(extra)[:2]})"
    )
