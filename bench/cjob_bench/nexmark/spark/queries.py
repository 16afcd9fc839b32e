"""Nexmark q0-q3, q5, q7, q8, q11 and q12 on Spark Structured Streaming, as a Spark user writes them.

Each query is a function of its input streaming DataFrames (``Inputs``: kind →
DataFrame with ``event_time`` and its watermark, :mod:`.sources`) returning the
result as a streaming DataFrame that runs in ``append`` mode; q4 is in
:mod:`.q4`. The semantics are those of :mod:`cjob_bench.nexmark.queries` and
:mod:`~cjob_bench.nexmark.queries_windowed` (Flink's nexmark SQL); timestamps
leave as int64 milliseconds (``unix_millis``).

* q0, q1, q2: projections and filters; q1 ``0.908 * price`` as a double.
* q3: an inner stream-stream join of local people and category-10 auctions on
  ``id = seller``, without a time bound (Spark keeps both sides, as Flink does).
* q5: ``groupBy(window(event_time, 10 s, 2 s), auction).count()``, then a
  chained aggregation per window (``window(window_time(window), 2 s)``: the
  2 s tumbling window ending where the sliding one ends) keeping the highest
  count and every ``(auction, num)``; exploded, the rows at the highest count.
* q7: ``groupBy(window(event_time, 10 s))`` keeping the highest price and
  every bid (``collect_list``), exploded to the bids at that price.
* q8: people and auctions, each with its 10 s tumbling window, joined on
  ``id = seller`` and equal windows (Spark's event-time window join, whose
  state the watermark clears), then ``groupBy(window, id, name)`` so that a
  person with several auctions in the window is one row (Flink groups each
  side per window before its join; Spark allows one aggregation after a join).
* q11: ``groupBy(session_window(event_time, 10 s), bidder).count()``.
* q12: ``groupBy(window(event_time, 10 s), bidder).count()`` on event time
  (see :mod:`~cjob_bench.nexmark.queries_windowed` for why not ``PROCTIME()``).

Stateful queries emit a window once the watermark passes it (append mode),
chained aggregations included (Spark >= 3.5 runs several stateful operators in
one query).

>>> sorted(QUERIES)
['q0', 'q1', 'q11', 'q12', 'q2', 'q3', 'q4', 'q5', 'q7', 'q8']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cjob_bench.nexmark.spark import q4 as q4_module

Inputs = Mapping[str, Any]
"""Streaming DataFrames by kind: ``persons``, ``auctions``, ``bids``."""
Query = Callable[[Inputs], Any]

EURO_RATE = 0.908
Q2_SKIP = 123
Q3_CATEGORY = 10
Q3_STATES = ("OR", "ID", "CA")
WINDOW = "10 seconds"
HOP = "2 seconds"
WINDOW_MS = 10_000
BID_COLUMNS = ("auction", "bidder", "price", "dateTime", "extra")


def _sf() -> Any:
    from pyspark.sql import functions as sf  # noqa: PLC0415 (only where Spark runs)

    return sf


def q0(inputs: Inputs) -> Any:
    return inputs["bids"].select(*BID_COLUMNS)


def q1(inputs: Inputs) -> Any:
    sf = _sf()
    price = (sf.lit(EURO_RATE) * sf.col("price").cast("double")).alias("price")
    return inputs["bids"].select("auction", "bidder", price, "dateTime", "extra")


def q2(inputs: Inputs) -> Any:
    sf = _sf()
    return inputs["bids"].filter(sf.col("auction") % Q2_SKIP == 0).select("auction", "price")


def q3(inputs: Inputs) -> Any:
    sf = _sf()
    people = inputs["persons"].filter(sf.col("state").isin(*Q3_STATES))
    people = people.select(sf.col("id").alias("person"), "name", "city", "state")
    auctions = inputs["auctions"].filter(sf.col("category") == Q3_CATEGORY)
    auctions = auctions.select("id", "seller")
    joined = auctions.join(people, auctions["seller"] == people["person"])
    return joined.select("name", "city", "state", "id")


def _millis(column: Any) -> Any:
    return _sf().unix_millis(column)


def q5(inputs: Inputs) -> Any:
    sf = _sf()
    counts = (
        inputs["bids"]
        .groupBy(sf.window("event_time", WINDOW, HOP), "auction")
        .agg(sf.count(sf.lit(1)).alias("num"))
    )
    per_window = counts.groupBy(sf.window(sf.window_time("window"), HOP).alias("hop")).agg(
        sf.max("num").alias("most"),
        sf.collect_list(sf.struct("auction", "num")).alias("counts"),
    )
    rows = per_window.select("hop", "most", sf.explode("counts").alias("c"))
    end = _millis(sf.col("hop.end"))
    return rows.filter(sf.col("c.num") == sf.col("most")).select(
        sf.col("c.auction").alias("auction"),
        sf.col("c.num").alias("num"),
        (end - WINDOW_MS).alias("window_start"),
        end.alias("window_end"),
    )


def q7(inputs: Inputs) -> Any:
    sf = _sf()
    highest = (
        inputs["bids"]
        .groupBy(sf.window("event_time", WINDOW))
        .agg(
            sf.max("price").alias("highest"),
            sf.collect_list(sf.struct(*BID_COLUMNS)).alias("bids"),
        )
    )
    bids = highest.select("highest", sf.explode("bids").alias("b"))
    return bids.filter(sf.col("b.price") == sf.col("highest")).select("b.*")


def q8(inputs: Inputs) -> Any:
    sf = _sf()
    people = inputs["persons"].select(
        "id", "name", sf.window("event_time", WINDOW).alias("person_window")
    )
    sellers = inputs["auctions"].select(
        "seller", sf.window("event_time", WINDOW).alias("auction_window")
    )
    joined = people.join(
        sellers,
        (people["id"] == sellers["seller"])
        & (people["person_window"] == sellers["auction_window"]),
    )
    new = joined.groupBy("person_window", "id", "name").agg(sf.count(sf.lit(1)).alias("auctions"))
    return new.select("id", "name", _millis(sf.col("person_window.start")).alias("starttime"))


def _windowed_counts(window: Any, inputs: Inputs) -> Any:
    sf = _sf()
    counts = inputs["bids"].groupBy(window, "bidder").agg(sf.count(sf.lit(1)).alias("bid_count"))
    return counts.select(
        "bidder",
        "bid_count",
        _millis(sf.col(f"{window_name(window)}.start")).alias("window_start"),
        _millis(sf.col(f"{window_name(window)}.end")).alias("window_end"),
    )


def window_name(window: Any) -> str:
    """The column name Spark gives a ``window``/``session_window`` grouping expression."""
    return "session_window" if "session_window" in str(window) else "window"


def q11(inputs: Inputs) -> Any:
    return _windowed_counts(_sf().session_window("event_time", WINDOW), inputs)


def q12(inputs: Inputs) -> Any:
    return _windowed_counts(_sf().window("event_time", WINDOW), inputs)


QUERIES: dict[str, Query] = {
    "q0": q0,
    "q1": q1,
    "q2": q2,
    "q3": q3,
    "q4": q4_module.q4,
    "q5": q5,
    "q7": q7,
    "q8": q8,
    "q11": q11,
    "q12": q12,
}
CLOSED_BY_WATERMARK = frozenset({"q4", "q5", "q7", "q8", "q11", "q12"})
"""The queries whose results the watermark releases (windows, q4's auctions closing)."""
CONF: dict[str, dict[str, str]] = {"q4": q4_module.CONF}
"""Session settings a query needs while it starts (restored after)."""
KINDS_READ: dict[str, tuple[str, ...]] = {
    "q3": ("persons", "auctions"),
    "q4": ("auctions", "bids"),
    "q8": ("persons", "auctions"),
}
"""The kinds each query reads; every other query reads only ``bids``."""


def kinds_read(query: str) -> tuple[str, ...]:
    """The kinds of events ``query`` reads."""
    return KINDS_READ.get(query, ("bids",))
