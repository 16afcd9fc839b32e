"""Nexmark q4 on Spark Structured Streaming: ``applyInPandasWithState`` per auction, then per category.

q4 (see :mod:`cjob_bench.nexmark.queries`): an auction's winning bid is its
highest bid between its ``dateTime`` and ``expires`` (inclusive); each closed
auction updates its category's running average of winning prices (a double),
checked by each category's final value. Flink's SQL joins auctions and bids
on a time bound taken from a column (``B.dateTime BETWEEN A.dateTime AND
A.expires``) and aggregates twice; Spark's interval join needs constant
bounds to clear its state, and its aggregation of a join's output cannot be
an unwindowed running average in append mode. So, as a Spark user does for
per-key logic, two ``applyInPandasWithState`` steps (the Python form of
``flatMapGroupsWithState``):

1. per auction, over auctions and bids merged (``unionByName``), an
   event-time timeout at ``expires``: the state keeps the auction's terms and
   its best price so far (bids seen before their auction wait in the state, as
   JSON, until it arrives); when the watermark passes ``expires`` the winner
   (``auction, category, final``) goes out;
2. per category, no timeout: every winner updates ``(total, count)`` and
   emits ``category, avg, auctions``.

Both in append mode. Spark refuses two ``applyInPandasWithState`` in one
query, so step 2 is ``transformWithStateInPandas`` (Spark 4's state API v2,
which needs the RocksDB state store: :data:`CONF`). Spark's check of chained
stateful operators against the global watermark rejects the chain (step 1
emits winners older than the watermark); step 2 has no event time (its time
mode is ``None``: no timers, nothing dropped as late), so that check does
not apply and :data:`CONF` turns it off for this query.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

WINNER = "auction BIGINT, category BIGINT, final BIGINT"
AUCTION_STATE = "category BIGINT, start BIGINT, expires BIGINT, best BIGINT, early STRING"
AVERAGE = "category BIGINT, avg DOUBLE, auctions BIGINT"
TOTALS = "total BIGINT, count BIGINT"
CONF = {
    "spark.sql.streaming.stateStore.providerClass": (
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    ),
    "spark.sql.streaming.statefulOperator.checkCorrectness.enabled": "false",
}
"""Session settings q4's query starts with (see the module docstring)."""
_MERGED = ("auction", "is_bid", "price", "dateTime", "expires", "category", "event_time")


def track_auction(key: tuple[Any, ...], frames: Iterator[Any], state: Any) -> Iterator[Any]:
    """Step 1, per auction: keep its terms and best price; emit the winner at ``expires``."""
    import pandas as pd  # type: ignore[import-untyped]  # noqa: PLC0415 (Spark's workers)

    if state.hasTimedOut:
        category, start, _, best, _ = state.get
        state.remove()
        if start is not None and best is not None:
            yield pd.DataFrame({"auction": [key[0]], "category": [category], "final": [best]})
        return
    rows = pd.concat(list(frames))
    kept: tuple[Any, ...] = state.get if state.exists else (None,) * 5
    category, start, expires, best, early = kept
    waiting: list[list[int]] = json.loads(early) if early else []
    terms = rows[~rows["is_bid"]]
    if len(terms):
        first = terms.iloc[0]
        category, start, expires = (int(first[c]) for c in ("category", "dateTime", "expires"))
    bids = rows[rows["is_bid"]]
    waiting += [[int(t), int(p)] for t, p in zip(bids["dateTime"], bids["price"], strict=True)]
    if start is None:  # no auction yet: the bids wait for it
        state.update((None, None, None, None, json.dumps(waiting)))
        deadline = max(t for t, _ in waiting)
    else:
        prices = [p for t, p in waiting if start <= t <= expires]
        if prices:
            best = max(prices) if best is None else max(best, *prices)
        state.update((category, start, expires, best, None))
        deadline = expires
    state.setTimeoutTimestamp(max(deadline, state.getCurrentWatermarkMs() + 1))
    return


def _category_average_processor() -> Any:
    """Step 2's processor class (defined where Spark runs: its base class is pyspark's)."""
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor  # noqa: PLC0415

    class CategoryAverage(StatefulProcessor):
        """Per category: the running average of its winning prices, one row per winner."""

        def init(self, handle: Any) -> None:
            self.totals = handle.getValueState("totals", TOTALS)

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Any:  # noqa: N802, N803
            import pandas as pd  # noqa: PLC0415 (Spark's workers)

            total, count = self.totals.get() if self.totals.exists() else (0, 0)
            averages, counts = [], []
            for frame in rows:
                for final in frame["final"]:
                    total, count = total + int(final), count + 1
                    averages.append(total / count)
                    counts.append(count)
            self.totals.update((total, count))
            yield pd.DataFrame({"category": key[0], "avg": averages, "auctions": counts})

        def close(self) -> None:
            pass

    return CategoryAverage()


def q4(inputs: Mapping[str, Any]) -> Any:
    """q4 over ``inputs`` (``auctions`` and ``bids`` with event time, :mod:`.sources`)."""
    from pyspark.sql import functions as sf  # noqa: PLC0415 (only where Spark runs)
    from pyspark.sql.streaming.state import GroupStateTimeout  # noqa: PLC0415

    null = sf.lit(None).cast("bigint")
    terms = inputs["auctions"].select(
        sf.col("id").alias("auction"),
        sf.lit(False).alias("is_bid"),
        null.alias("price"),
        "dateTime",
        "expires",
        "category",
        "event_time",
    )
    bids = inputs["bids"].select(
        "auction",
        sf.lit(True).alias("is_bid"),
        "price",
        "dateTime",
        null.alias("expires"),
        null.alias("category"),
        "event_time",
    )
    winners = (
        terms.unionByName(bids)
        .select(*_MERGED)
        .groupBy("auction")
        .applyInPandasWithState(
            track_auction, WINNER, AUCTION_STATE, "append", GroupStateTimeout.EventTimeTimeout
        )
    )
    return winners.groupBy("category").transformWithStateInPandas(
        _category_average_processor(), AVERAGE, "append", "None"
    )
