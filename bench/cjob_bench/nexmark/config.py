"""The Nexmark generator's parameters and the arithmetic every event derives from them.

The parameters and their defaults are those of the reference generator
(Apache Beam's ``NexmarkConfiguration`` / ``GeneratorConfig``, which Flink's
nexmark repository reuses): a first event rate of 10 000 events/s, people,
auctions and bids in the proportions 1 : 3 : 46, hot auctions, bidders and
sellers (a bid goes to a hot auction with probability 1 - 1/2, is made by a hot
bidder with 1 - 1/4, an auction is sold by a hot seller with 1 - 1/4), 1 000
active people, 100 auctions in flight, average sizes of 200, 500 and 100 bytes.

Events are split among ``generators`` parallel timelines, like the reference's
``numEventGenerators``: generator ``g`` owns a contiguous range of event ids
and stamps its ``k``-th event ``base_time_ms + k * delay * generators``, so all
generators together produce ``first_event_rate`` events per second of event
time and each one's output is in event-time order (but for
``out_of_order_group_size``). Which kind an event is, and the ids it carries,
follow from its event id alone.

>>> cfg = NexmarkConfig(events=100, generators=3)
>>> [cfg.generator_range(g) for g in range(3)]
[(0, 33), (33, 66), (66, 100)]
>>> cfg.inter_event_delay_us, int(cfg.timestamp_ms(np.int64(10)) - cfg.base_time_ms)
(300, 3)
>>> [int(k) for k in cfg.kinds(np.arange(0, 6))]
[0, 1, 1, 1, 2, 2]
"""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]

FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID = 10
NUM_CATEGORIES = 5
PERSON_ID_LEAD = 10
"""How many person ids ahead of the newest a random choice may pick (not yet created)."""
AUCTION_ID_LEAD = 10
HOT_GROUP = 100
"""Hot ids are the first (sellers, auctions) or second (bidders) of the newest group of 100."""
BASE_TIME_MS = 1_436_918_400_000
"""2015-07-15T00:00:00Z, the reference's base time."""

PERSON, AUCTION, BID = 0, 1, 2
"""Event kinds."""


class InvalidConfigError(ValueError):
    """A Nexmark parameter is out of range; the message names it."""


@dataclasses.dataclass(frozen=True, slots=True)
class NexmarkConfig:
    """What the generator makes; every field but ``seed`` is the reference's parameter."""

    events: int = 100_000
    first_event_rate: int = 10_000
    """Events per second of event time, all generators together."""
    generators: int = 1
    person_proportion: int = 1
    auction_proportion: int = 3
    bid_proportion: int = 46
    hot_auction_ratio: int = 2
    hot_sellers_ratio: int = 4
    hot_bidders_ratio: int = 4
    num_active_people: int = 1000
    num_in_flight_auctions: int = 100
    avg_person_byte_size: int = 200
    avg_auction_byte_size: int = 500
    avg_bid_byte_size: int = 100
    out_of_order_group_size: int = 1
    base_time_ms: int = BASE_TIME_MS
    seed: int = 0
    """Ours: the reference seeds each event's randomness with its event id alone."""

    def __post_init__(self) -> None:
        positive = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in ("base_time_ms", "seed", "events")
        }
        for name, value in positive.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidConfigError(f"{name} must be a positive int, got {value!r}")
        if not isinstance(self.events, int) or self.events < 0:
            raise InvalidConfigError(f"events must be a non-negative int, got {self.events!r}")
        if self.generators > max(self.events, 1):
            raise InvalidConfigError(
                f"generators ({self.generators}) above events ({self.events}): "
                "a generator would make nothing"
            )

    @property
    def denominator(self) -> int:
        return self.person_proportion + self.auction_proportion + self.bid_proportion

    @property
    def inter_event_delay_us(self) -> int:
        """Microseconds between two events of one generator (the rate rounded as the reference)."""
        period = (1_000_000 + self.first_event_rate // 2) // self.first_event_rate
        return period * self.generators

    def generator_range(self, g: int) -> tuple[int, int]:
        """The event ids ``[first, stop)`` generator ``g`` makes (the last takes the remainder)."""
        share = self.events // self.generators
        first = g * share
        return first, (self.events if g == self.generators - 1 else first + share)

    def adjusted(self, numbers: Ints) -> Ints:
        """The event numbers after out-of-order grouping (a permutation within each group)."""
        n = self.out_of_order_group_size
        return np.asarray(numbers // n * n + numbers * 953 % n, dtype=np.int64)

    def timestamp_ms(self, numbers: Ints) -> Ints:
        """Event time (ms) of a generator's events by (adjusted) event number (every
        generator runs the same timeline)."""
        return np.asarray(
            self.base_time_ms + np.asarray(numbers, np.int64) * self.inter_event_delay_us // 1000,
            dtype=np.int64,
        )

    def kinds(self, event_ids: Ints) -> npt.NDArray[np.int8]:
        """PERSON, AUCTION or BID for each event id."""
        rem = event_ids % self.denominator
        return np.where(
            rem < self.person_proportion,
            PERSON,
            np.where(rem < self.person_proportion + self.auction_proportion, AUCTION, BID),
        ).astype(np.int8)

    def last_person(self, event_ids: Ints) -> Ints:
        """The newest person id (base 0) at each event: its own when the event is a person."""
        epoch, offset = np.divmod(event_ids, self.denominator)
        offset = np.minimum(offset, self.person_proportion - 1)
        return np.asarray(epoch * self.person_proportion + offset, dtype=np.int64)

    def last_auction(self, event_ids: Ints) -> Ints:
        """The newest auction id (base 0) at each event: its own when the event is an auction."""
        epoch, offset = np.divmod(event_ids, self.denominator)
        pp, ap = self.person_proportion, self.auction_proportion
        person = offset < pp
        epoch = np.where(person, epoch - 1, epoch)
        offset = np.where(person | (offset >= pp + ap), ap - 1, offset - pp)
        return np.asarray(epoch * ap + offset, dtype=np.int64)

    @property
    def events_for_in_flight_auctions(self) -> int:
        """How many events it takes to create ``num_in_flight_auctions`` auctions."""
        return self.num_in_flight_auctions * self.denominator // self.auction_proportion
