"""Nexmark q0-q4 written with the runtime's public API, as a user would; :func:`build` makes any query.

Every query reads the Parquet files of :mod:`.files` with ``FileSource`` (one
source per kind it needs, event time from ``dateTime``, watermarks
``bound_ms`` behind the newest event) and ends in the sink it is given.
Definitions follow Flink's nexmark SQL (the field's common reference):

* q0, pass-through: every bid, as it is (Arrow batches straight to the sink);
* q1, currency conversion: bids with ``price`` in euros, ``0.908 * price``
  (a double; Beam's ``price * 89 / 100`` is integer);
* q2, selection: ``auction, price`` of the bids on every 123rd auction;
* q3, local item suggestion: ``name, city, state, id`` of every auction in
  category 10 sold by a person from OR, ID or CA (a regular, unwindowed join,
  both sides kept per seller in keyed state, as Flink does);
* q4, average winning price per category: an auction's winning bid is its
  highest bid between its ``dateTime`` and ``expires`` (inclusive); each closed
  auction updates its category's running ``avg`` (``final`` prices summed over
  ``auctions`` counted; a double, where Flink's ``AVG`` of a ``BIGINT`` is
  integer). Auctions close on an event-time timer at ``expires``.

The windowed queries (q5, q7, q8, q11, q12) are in :mod:`.queries_windowed`.

>>> from barrier_runtime.connectors.discard import DiscardSink
>>> flow = build("q3", "/nowhere", DiscardSink())
>>> flow.step_ids[-1], sorted(QUERIES) == sorted(ALL)
('out', True)
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from barrier_runtime.api import Dataflow, Record, Sink, Stream
from barrier_runtime.api.process import ProcessContext
from barrier_runtime.api.watermarks import BoundedOutOfOrderness
from barrier_runtime.connectors.file_source import FileSource
from cjob_bench.nexmark import queries_windowed

Builder = Callable[[Dataflow, Callable[[str], Stream], Sink], None]

EURO_RATE = 0.908
Q2_SKIP = 123
Q3_CATEGORY = 10
Q3_STATES = ("OR", "ID", "CA")


class UnknownQueryError(ValueError):
    """A query name this module does not build; the message lists the known ones."""


class Sources:
    """Adds the source of one kind of event to a flow (each at most once)."""

    def __init__(self, flow: Dataflow, data: str, batch_size: int, bound_ms: int) -> None:
        self.flow, self.data, self.batch_size, self.bound_ms = flow, data, batch_size, bound_ms

    def __call__(self, kind: str) -> Stream:
        source = FileSource(
            str(pathlib.PurePosixPath(self.data) / kind)
            if "://" not in self.data
            else f"{self.data.rstrip('/')}/{kind}",
            pattern="*.parquet",
            batch_size=self.batch_size,
        )
        return self.flow.source(
            kind,
            source,
            timestamps="dateTime",
            watermarks=BoundedOutOfOrderness(self.bound_ms),
        )


def build(
    query: str, data: str, sink: Sink, *, batch_size: int = 8_192, bound_ms: int = 0
) -> Dataflow:
    """The dataflow of ``query`` over the events under ``data``, its results into ``sink``."""
    if query not in ALL:
        raise UnknownQueryError(f"no Nexmark query {query!r}; choose one of {', '.join(ALL)}")
    flow = Dataflow(f"nexmark-{query}")
    ALL[query](flow, Sources(flow, data, batch_size, bound_ms), sink)
    return flow


def q0(flow: Dataflow, source: Callable[[str], Stream], sink: Sink) -> None:
    source("bids").sink("out", sink)


def _euros(batch: pa.RecordBatch) -> pa.RecordBatch:
    price = pc.multiply(batch.column("price").cast(pa.float64()), EURO_RATE)
    return batch.set_column(batch.schema.get_field_index("price"), "price", price)


def q1(flow: Dataflow, source: Callable[[str], Stream], sink: Sink) -> None:
    source("bids").map_batches("euros", _euros).sink("out", sink)


def _every_123rd_auction(batch: pa.RecordBatch) -> pa.RecordBatch:
    keep = np.mod(batch.column("auction").to_numpy(), Q2_SKIP) == 0
    return batch.select(["auction", "price"]).filter(pa.array(keep))


def q2(flow: Dataflow, source: Callable[[str], Stream], sink: Sink) -> None:
    source("bids").map_batches("selection", _every_123rd_auction).sink("out", sink)


def _local_people(batch: pa.RecordBatch) -> pa.RecordBatch:
    keep = pc.is_in(batch.column("state"), pa.array(Q3_STATES))
    return batch.select(["id", "name", "city", "state"]).filter(keep)


def _category_10(batch: pa.RecordBatch) -> pa.RecordBatch:
    keep = pc.equal(batch.column("category"), Q3_CATEGORY)
    return batch.select(["id", "seller"]).filter(keep)


def suggest(state: Any, side: int, record: Record) -> tuple[Any, Iterable[Record]]:
    """q3's join, per seller: side 0 a person (kept), side 1 one of their auctions."""
    state = state or {}
    if side == 0:
        found = [record["name"], record["city"], record["state"]]
        return {"person": found}, [_suggestion(found, a) for a in state.get("pending", ())]
    if "person" in state:
        return state, [_suggestion(state["person"], record["id"])]
    return {"pending": [*state.get("pending", ()), record["id"]]}, ()


def _suggestion(person: list[Any], auction: int) -> Record:
    return {"name": person[0], "city": person[1], "state": person[2], "id": auction}


def q3(flow: Dataflow, source: Callable[[str], Stream], sink: Sink) -> None:
    people = source("persons").map_batches("local-people", _local_people)
    auctions = source("auctions").map_batches("category-10", _category_10)
    people.key_by("person-by-id", "id").connect(
        "q3", auctions.key_by("auction-by-seller", "seller"), suggest
    ).sink("out", sink)


_Q4_SCHEMA = pa.schema(
    [
        ("auction", pa.int64()),
        ("is_bid", pa.bool_()),
        ("price", pa.int64()),
        ("dateTime", pa.int64()),
        ("expires", pa.int64()),
        ("category", pa.int64()),
    ]
)


def _auction_terms(batch: pa.RecordBatch) -> pa.RecordBatch:
    n = batch.num_rows
    columns = [batch.column("id"), pa.array(np.zeros(n, bool)), pa.nulls(n, pa.int64())]
    columns += [batch.column(c) for c in ("dateTime", "expires", "category")]
    return pa.record_batch(columns, schema=_Q4_SCHEMA)


def _bid_prices(batch: pa.RecordBatch) -> pa.RecordBatch:
    n = batch.num_rows
    columns = [batch.column("auction"), pa.array(np.ones(n, bool)), batch.column("price")]
    columns += [batch.column("dateTime"), pa.nulls(n, pa.int64()), pa.nulls(n, pa.int64())]
    return pa.record_batch(columns, schema=_Q4_SCHEMA)


def track_auction(state: Any, record: Record, ctx: ProcessContext) -> tuple[Any, Iterable[Record]]:
    """q4, per auction: its terms ``[category, start, expires, best]`` and bids seen before it."""
    state = state or {"auction": None, "early": []}
    if not record["is_bid"]:
        start, expires = record["dateTime"], record["expires"]
        early = [p for t, p in state["early"] if start <= t <= expires]
        ctx.register_event_time_timer(expires)
        return {"auction": [record["category"], start, expires, max(early, default=None)]}, ()
    terms = state["auction"]
    if terms is None:  # not seen yet (or closed): keep until the watermark passes the bid
        ctx.register_event_time_timer(record["dateTime"])
        bid = [record["dateTime"], record["price"]]
        return {"auction": None, "early": [*state["early"], bid]}, ()
    category, start, expires, best = terms
    if start <= record["dateTime"] <= expires and (best is None or record["price"] > best):
        return {"auction": [category, start, expires, record["price"]]}, ()
    return state, ()


def close_auction(state: Any, timer: Any, ctx: ProcessContext) -> tuple[Any, Iterable[Record]]:
    """q4: at ``expires`` the auction's winning bid goes out; earlier timers drop stale bids."""
    if state is None:
        return None, ()
    terms = state["auction"]
    if terms is None:
        early = [bid for bid in state["early"] if bid[0] > timer.time]
        return ({"auction": None, "early": early} if early else None), ()
    if timer.time < terms[2]:
        return state, ()
    category, _, _, best = terms
    won = () if best is None else ({"auction": ctx.key, "category": category, "final": best},)
    return None, won


def category_average(state: Any, record: Record) -> tuple[Any, Iterable[Record]]:
    """q4: the running average of a category's winning prices, updated per closed auction."""
    total, count = state or (0, 0)
    total, count = total + record["final"], count + 1
    out = {"category": record["category"], "avg": total / count, "auctions": count}
    return [total, count], (out,)


def q4(flow: Dataflow, source: Callable[[str], Stream], sink: Sink) -> None:
    terms = source("auctions").map_batches("auction-terms", _auction_terms)
    bids = source("bids").map_batches("bid-prices", _bid_prices)
    winners = (
        flow.merge("auctions-and-bids", terms, bids)
        .key_by("by-auction", "auction")
        .process("winning-bids", track_auction, close_auction, timestamps="dateTime")
    )
    winners.key_by("by-category", "category").stateful_map("q4", category_average).sink("out", sink)


ALL: dict[str, Builder] = {
    "q0": q0,
    "q1": q1,
    "q2": q2,
    "q3": q3,
    "q4": q4,
    **queries_windowed.QUERIES,
}
QUERIES = tuple(ALL)
