"""Nexmark's windowed queries (q5, q7, q8, q11, q12) with the public API; built by :func:`.queries.build`.

* q5, hot items: per 10 s window sliding every 2 s, the auctions with the
  most bids (``auction, num, window_start, window_end``; ties all kept).
  Bids are counted per auction and window vectorised (``window_agg``), then
  each window's counts meet in a 2 s tumbling window keyed by the window's
  end, stamped ``window_end - 1`` (the time Flink gives a window's result).
* q7, highest bid: per 10 s tumbling window, the bids with the highest price
  (``auction, price, bidder, dateTime, extra``). A vectorised combiner keeps,
  per batch and window, only the bids at the batch's highest price (no other
  can win); the survivors meet in a tumbling window keyed by its end.
* q8, monitor new users: the people who opened an auction in the same 10 s
  tumbling window as they registered (``id, name, starttime``), a windowed
  join written as both kinds merged, keyed by person and windowed together.
* q11, user sessions: bids per bidder per session window with a 10 s gap
  (``bidder, bid_count, window_start, window_end``; the end is the last bid + 10 s),
  vectorised (``window_agg`` with ``Session``: sessions merge per batch).
* q12, processing-time windows, deterministic variant: bids per bidder per
  10 s tumbling window of *event* time. Flink's q12 windows on ``PROCTIME()``,
  whose results depend on how fast the machine reads; our generator's event
  time is the time it would emit the event at the configured rate (the
  reference's wall-clock schedule without delays), so this is q12 on the
  generator's clock, and it can be checked. The runtime has processing-time
  timers (``process`` with ``register_processing_time_timer``) but no
  processing-time window assigner: the smallest addition for the real q12 is
  ``window(..., time="processing")`` (assign by ``ctx.processing_time``, fire
  on processing-time timers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from barrier_runtime.api import Dataflow, Record, Sink, Stream
from barrier_runtime.api.windows import AggregateFunction, Session, Sliding, Tumbling, Window, count

SourceOf = Callable[[str], Stream]
WINDOW_MS = 10_000
HOP_MS = 2_000


def _stamp_result(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A window result's event time: its window's last millisecond."""
    return batch.append_column("ts", pc.subtract(batch.column("window_end"), 1))


def hottest(key: Any, window: Window, counts: list[Record]) -> Iterable[Record]:
    """q5: the auctions of one sliding window with the most bids."""
    most = max(r["num"] for r in counts)
    return [
        {k: r[k] for k in ("auction", "num", "window_start", "window_end")}
        for r in counts
        if r["num"] == most
    ]


def q5(flow: Dataflow, source: SourceOf, sink: Sink) -> None:
    counts = (
        source("bids")
        .key_by("by-auction", "auction")
        .window_agg("bids-per-auction", Sliding(WINDOW_MS, HOP_MS), aggregate={"num": count()})
    )
    counts.map_batches("stamp", _stamp_result).key_by("by-window", "window_end").window(
        "q5", Tumbling(HOP_MS), timestamps="ts", process=hottest
    ).sink("out", sink)


def _highest_in_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """q7's combiner: per tumbling window in the batch, only its highest-priced bids."""
    times, price = batch.column("dateTime").to_numpy(), batch.column("price").to_numpy()
    ends = times - np.mod(times, WINDOW_MS) + WINDOW_MS
    keep = np.zeros(len(times), bool)
    for end in np.unique(ends):
        mine = ends == end
        keep |= mine & (price == price[mine].max())
    return batch.append_column("window", pa.array(ends)).filter(pa.array(keep))


class HighestBids(AggregateFunction[list[Any]]):
    """q7: ``[price, bids]``, the highest price so far and every bid at it."""

    def create(self) -> list[Any]:
        return [None, []]

    def add(self, acc: list[Any], record: Record) -> list[Any]:
        bid = {k: record[k] for k in ("auction", "price", "bidder", "dateTime", "extra")}
        return self.merge(acc, [record["price"], [bid]])

    def merge(self, a: list[Any], b: list[Any]) -> list[Any]:
        if a[0] is None or (b[0] is not None and b[0] > a[0]):
            return b
        return a if b[0] is None or b[0] < a[0] else [a[0], a[1] + b[1]]

    def result(self, acc: list[Any]) -> Any:
        return acc[1]


def q7(flow: Dataflow, source: SourceOf, sink: Sink) -> None:
    highest = (
        source("bids")
        .map_batches("highest-per-batch", _highest_in_batch)
        .key_by("by-window", "window")
        .window("q7", Tumbling(WINDOW_MS), aggregate=HighestBids(), output="bids")
    )
    highest.flat_map("winning-bids", lambda r: r["bids"]).sink("out", sink)


_Q8_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dateTime", pa.int64())])


def _new_people(batch: pa.RecordBatch) -> pa.RecordBatch:
    return batch.select(["id", "name", "dateTime"])


def _sellers(batch: pa.RecordBatch) -> pa.RecordBatch:
    names = pa.nulls(batch.num_rows, pa.string())
    return pa.record_batch(
        [batch.column("seller"), names, batch.column("dateTime")], schema=_Q8_SCHEMA
    )


def new_sellers(key: Any, window: Window, records: list[Record]) -> Iterable[Record]:
    """q8: a person (``name`` set) and an auction of theirs (``name`` null) in one window."""
    names = [r["name"] for r in records if r["name"] is not None]
    if names and len(names) < len(records):
        return [{"id": key, "name": names[0], "starttime": window.start}]
    return []


def q8(flow: Dataflow, source: SourceOf, sink: Sink) -> None:
    people = source("persons").map_batches("new-people", _new_people)
    sellers = source("auctions").map_batches("sellers", _sellers)
    flow.merge("people-and-sellers", people, sellers).key_by("by-person", "id").window(
        "q8", Tumbling(WINDOW_MS), process=new_sellers
    ).sink("out", sink)


def q11(flow: Dataflow, source: SourceOf, sink: Sink) -> None:
    source("bids").key_by("by-bidder", "bidder").window_agg(
        "q11", Session(WINDOW_MS), aggregate={"bid_count": count()}
    ).sink("out", sink)


def q12(flow: Dataflow, source: SourceOf, sink: Sink) -> None:
    source("bids").key_by("by-bidder", "bidder").window_agg(
        "q12", Tumbling(WINDOW_MS), aggregate={"bid_count": count()}
    ).sink("out", sink)


QUERIES: dict[str, Callable[[Dataflow, SourceOf, Sink], None]] = {
    "q5": q5,
    "q7": q7,
    "q8": q8,
    "q11": q11,
    "q12": q12,
}
