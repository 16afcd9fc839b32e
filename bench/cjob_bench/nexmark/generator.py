"""The Nexmark event generator, vectorised: a range of one generator's events as three Arrow tables.

The rules are the reference's (Beam's ``PersonGenerator``, ``AuctionGenerator``,
``BidGenerator``; see :mod:`.config` for the parameters):

* an event's kind and id come from its event id: of every 50 ids, 1 is a
  person, 3 are auctions, 46 are bids; person and auction ids count up from 1000;
* a bid goes to the newest group of 100 auctions' first one (hot) with
  probability ``1 - 1/hot_auction_ratio``, else to a random auction among the
  ``num_in_flight_auctions`` newest (and up to 10 not yet created); its bidder
  is the newest group of 100 people's second one (hot) with probability
  ``1 - 1/hot_bidders_ratio``, else a random one of the ``num_active_people``
  newest (and up to 10 ahead);
* an auction's seller is the newest group's first person (hot) with
  probability ``1 - 1/hot_sellers_ratio``, else a random active person; its
  category is one of 5 (10-14); it expires after a random time averaging the
  time it takes to create ``num_in_flight_auctions`` more auctions;
* prices are ``round(10 ** (6u) * 100)`` cents for a uniform ``u``;
* ``extra`` pads each event to its kind's average size, +-20 %.

What differs: randomness is a hash of (seed, event id, field) instead of
``java.util.Random(event id)`` (:mod:`.draws`), so the values are not Beam's
byte for byte; random strings come from a pool of random letters (not trimmed);
bids carry no ``channel``/``url`` (Flink's later additions, read by q14+ only);
event times are ``int64`` milliseconds since the epoch in ``dateTime`` and
``expires``. Rate shapes (square, sine) and the wall-clock delays of "late"
events are not generated: files have no wall clock.

Tables (one per kind: every query reads one or two kinds, and a table per kind
keeps each column non-null and each source reading only what it needs):

>>> cfg = NexmarkConfig(events=1_000)
>>> batches = generate(cfg, 0, 0, 1_000)
>>> batches.persons.num_rows, batches.auctions.num_rows, batches.bids.num_rows
(20, 60, 920)
>>> batches.bids.schema.names
['auction', 'bidder', 'price', 'dateTime', 'extra']
>>> generate(cfg, 0, 0, 1_000) == batches
True
"""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from cjob_bench.nexmark import config as config_mod
from cjob_bench.nexmark import draws
from cjob_bench.nexmark.config import NexmarkConfig

Ints = config_mod.Ints

US_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
US_CITIES = (
    "Phoenix",
    "Los Angeles",
    "San Francisco",
    "Boise",
    "Portland",
    "Bend",
    "Redmond",
    "Seattle",
    "Kent",
    "Cheyenne",
)
FIRST_NAMES: tuple[str, ...] = tuple(
    ["Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"]
)
LAST_NAMES: tuple[str, ...] = tuple(
    ["Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"]
)

PERSON_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("emailAddress", pa.string()),
        ("creditCard", pa.string()),
        ("city", pa.string()),
        ("state", pa.string()),
        ("dateTime", pa.int64()),
        ("extra", pa.string()),
    ]
)
AUCTION_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("itemName", pa.string()),
        ("description", pa.string()),
        ("initialBid", pa.int64()),
        ("reserve", pa.int64()),
        ("dateTime", pa.int64()),
        ("expires", pa.int64()),
        ("seller", pa.int64()),
        ("category", pa.int64()),
        ("extra", pa.string()),
    ]
)
BID_SCHEMA = pa.schema(
    [
        ("auction", pa.int64()),
        ("bidder", pa.int64()),
        ("price", pa.int64()),
        ("dateTime", pa.int64()),
        ("extra", pa.string()),
    ]
)
SCHEMAS = {"persons": PERSON_SCHEMA, "auctions": AUCTION_SCHEMA, "bids": BID_SCHEMA}

# one slot per random field (draws.words): fixed, so adding a field changes no other
_HOT, _PICK, _HOT2, _PICK2, _PRICE, _PRICE2, _CATEGORY, _EXPIRES = range(8)
_EXTRA_LEN, _EXTRA, _NAME_LEN, _NAME, _DESC_LEN, _DESC = range(8, 14)
_FIRST, _LAST, _CITY, _STATE, _CARD, _MAIL1_LEN, _MAIL1, _MAIL2_LEN, _MAIL2 = range(14, 23)


@dataclasses.dataclass(frozen=True, slots=True)
class EventTables:
    """The events of one range, by kind, each in event order."""

    persons: pa.Table
    auctions: pa.Table
    bids: pa.Table

    def by_kind(self) -> dict[str, pa.Table]:
        return {"persons": self.persons, "auctions": self.auctions, "bids": self.bids}


def generate(cfg: NexmarkConfig, g: int, start: int, stop: int) -> EventTables:
    """Events number ``start`` to ``stop`` (exclusive) of generator ``g``, as three tables.

    Event numbers count the generator's own events from 0; the generator's
    event ids start where :meth:`~.config.NexmarkConfig.generator_range` says.
    """
    first, end = cfg.generator_range(g)
    if not 0 <= start <= stop <= end - first:
        raise config_mod.InvalidConfigError(
            f"generator {g} makes event numbers [0, {end - first}); asked for [{start}, {stop})"
        )
    numbers = cfg.adjusted(np.arange(start, stop, dtype=np.int64))
    ids = first + numbers
    times = cfg.timestamp_ms(numbers)
    kinds = cfg.kinds(ids)
    pick = {kind: kinds == kind for kind in (config_mod.PERSON, config_mod.AUCTION, config_mod.BID)}
    return EventTables(
        persons=_persons(cfg, ids[pick[config_mod.PERSON]], times[pick[config_mod.PERSON]]),
        auctions=_auctions(
            cfg,
            ids[pick[config_mod.AUCTION]],
            numbers[pick[config_mod.AUCTION]],
            times[pick[config_mod.AUCTION]],
        ),
        bids=_bids(cfg, ids[pick[config_mod.BID]], times[pick[config_mod.BID]]),
    )


def _random_person(cfg: NexmarkConfig, ids: Ints, slot: int) -> Ints:
    """A random active person (base 0), up to ``PERSON_ID_LEAD`` ahead of the newest."""
    people = cfg.last_person(ids) + 1
    active = np.minimum(people, cfg.num_active_people)
    return (
        people
        - active
        + draws.uniform_ints(cfg.seed, ids, slot, active + config_mod.PERSON_ID_LEAD)
    )


def _random_auction(cfg: NexmarkConfig, ids: Ints, slot: int) -> Ints:
    """A random in-flight auction (base 0), up to ``AUCTION_ID_LEAD`` ahead of the newest."""
    newest = cfg.last_auction(ids)
    oldest = np.maximum(newest - cfg.num_in_flight_auctions, 0)
    span = newest - oldest + 1 + config_mod.AUCTION_ID_LEAD
    return oldest + draws.uniform_ints(cfg.seed, ids, slot, span)


def _hot(cfg: NexmarkConfig, ids: Ints, slot: int, ratio: int) -> npt.NDArray[np.bool_]:
    """True where the event picks a hot id: probability ``1 - 1/ratio``."""
    return draws.uniform_ints(cfg.seed, ids, slot, ratio) > 0


def prices(cfg: NexmarkConfig, ids: Ints, slot: int) -> Ints:
    """``round(10 ** (6u) * 100)``: cents from 1 to 100 000 000, log-uniform."""
    u = draws.uniform_doubles(cfg.seed, ids, slot)
    return np.floor(np.power(10.0, u * 6.0) * 100.0 + 0.5).astype(np.int64)


def _extra(cfg: NexmarkConfig, ids: Ints, current: Ints, average: int) -> pa.StringArray:
    """Padding so that an event's size averages ``average`` bytes (+-20 %)."""
    desired = np.maximum(average - current, 0)
    delta = np.floor(desired * 0.2 + 0.5).astype(np.int64)
    jitter = draws.uniform_ints(cfg.seed, ids, _EXTRA_LEN, np.maximum(2 * delta, 1))
    lengths = np.where(current > average, 0, desired - delta + np.where(delta == 0, 0, jitter))
    return draws.strings(cfg.seed, ids, _EXTRA, lengths)


def _words(cfg: NexmarkConfig, ids: Ints, len_slot: int, max_length: int) -> pa.StringArray:
    """The reference's ``nextString``: 3 to ``max_length - 1`` letters and spaces."""
    lengths = 3 + draws.uniform_ints(cfg.seed, ids, len_slot, max_length - 3)
    return draws.strings(cfg.seed, ids, len_slot + 1, lengths, spaces=True)


def _choice(cfg: NexmarkConfig, ids: Ints, slot: int, values: tuple[str, ...]) -> pa.Array:
    return pa.array(values, pa.string()).take(draws.uniform_ints(cfg.seed, ids, slot, len(values)))


def _persons(cfg: NexmarkConfig, ids: Ints, times: Ints) -> pa.Table:
    join = pc.binary_join_element_wise
    name = join(_choice(cfg, ids, _FIRST, FIRST_NAMES), _choice(cfg, ids, _LAST, LAST_NAMES), " ")
    email = join(_words(cfg, ids, _MAIL1_LEN, 7), _words(cfg, ids, _MAIL2_LEN, 5), "@")
    email = pc.binary_join_element_wise(email, pa.scalar(".com"), "")
    groups = [
        pc.utf8_lpad(
            pa.array(draws.uniform_ints(cfg.seed, ids, _CARD, 10_000 ** (i + 1)) // 10_000**i).cast(
                pa.string()
            ),
            4,
            "0",
        )
        for i in range(4)
    ]
    card = join(*groups, " ")
    city, state = _choice(cfg, ids, _CITY, US_CITIES), _choice(cfg, ids, _STATE, US_STATES)
    current = 8 + sum(
        pc.utf8_length(column).to_numpy().astype(np.int64)
        for column in (name, email, card, city, state)
    )
    columns = [
        cfg.last_person(ids) + config_mod.FIRST_PERSON_ID,
        name,
        email,
        card,
        city,
        state,
        times,
        _extra(cfg, ids, np.asarray(current, np.int64), cfg.avg_person_byte_size),
    ]
    return pa.table(columns, schema=PERSON_SCHEMA)


def _auctions(cfg: NexmarkConfig, ids: Ints, numbers: Ints, times: Ints) -> pa.Table:
    hot_seller = (cfg.last_person(ids) // config_mod.HOT_GROUP) * config_mod.HOT_GROUP
    seller = np.where(
        _hot(cfg, ids, _HOT, cfg.hot_sellers_ratio), hot_seller, _random_person(cfg, ids, _PICK)
    )
    category = config_mod.FIRST_CATEGORY_ID + draws.uniform_ints(
        cfg.seed, ids, _CATEGORY, config_mod.NUM_CATEGORIES
    )
    initial = prices(cfg, ids, _PRICE)
    horizon = cfg.timestamp_ms(numbers + cfg.events_for_in_flight_auctions) - times
    expires = times + 1 + draws.uniform_ints(cfg.seed, ids, _EXPIRES, np.maximum(horizon * 2, 1))
    item, description = _words(cfg, ids, _NAME_LEN, 20), _words(cfg, ids, _DESC_LEN, 100)
    current = 8 * 6 + (
        pc.utf8_length(item).to_numpy().astype(np.int64)
        + pc.utf8_length(description).to_numpy().astype(np.int64)
    )
    columns = [
        cfg.last_auction(ids) + config_mod.FIRST_AUCTION_ID,
        item,
        description,
        initial,
        initial + prices(cfg, ids, _PRICE2),
        times,
        expires,
        seller + config_mod.FIRST_PERSON_ID,
        category,
        _extra(cfg, ids, current, cfg.avg_auction_byte_size),
    ]
    return pa.table(columns, schema=AUCTION_SCHEMA)


def _bids(cfg: NexmarkConfig, ids: Ints, times: Ints) -> pa.Table:
    hot_auction = (cfg.last_auction(ids) // config_mod.HOT_GROUP) * config_mod.HOT_GROUP
    auction = np.where(
        _hot(cfg, ids, _HOT, cfg.hot_auction_ratio), hot_auction, _random_auction(cfg, ids, _PICK)
    )
    hot_bidder = (cfg.last_person(ids) // config_mod.HOT_GROUP) * config_mod.HOT_GROUP + 1
    bidder = np.where(
        _hot(cfg, ids, _HOT2, cfg.hot_bidders_ratio), hot_bidder, _random_person(cfg, ids, _PICK2)
    )
    columns = [
        auction + config_mod.FIRST_AUCTION_ID,
        bidder + config_mod.FIRST_PERSON_ID,
        prices(cfg, ids, _PRICE),
        times,
        _extra(cfg, ids, np.full(len(ids), 32, np.int64), cfg.avg_bid_byte_size),
    ]
    return pa.table(columns, schema=BID_SCHEMA)
