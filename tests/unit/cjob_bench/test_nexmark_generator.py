"""The Nexmark generator keeps the reference's rules: determinism, proportions, ids, hot keys, times, sizes.

Each test states one rule of Beam's generator (see
``cjob_bench.nexmark.generator``) and measures it on generated events.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pyarrow as pa
import pytest
from cjob_bench.nexmark import config, files, generator
from cjob_bench.nexmark.config import NexmarkConfig

EVENTS = 50_000


@pytest.fixture(scope="module")
def events() -> generator.EventTables:
    return generator.generate(NexmarkConfig(events=EVENTS), 0, 0, EVENTS)


def test_the_same_config_gives_the_same_bytes_in_any_batch_size(
    events: generator.EventTables,
) -> None:
    again = generator.generate(NexmarkConfig(events=EVENTS), 0, 0, EVENTS)
    assert again == events
    pieces = [generator.generate(NexmarkConfig(events=EVENTS), 0, a, b)
              for a, b in ((0, 777), (777, 20_001), (20_001, EVENTS))]  # fmt: skip
    for kind, table in events.by_kind().items():
        assert pa.concat_tables(p.by_kind()[kind] for p in pieces).equals(table)


def test_the_same_config_writes_the_same_files(tmp_path: pathlib.Path) -> None:
    cfg = NexmarkConfig(events=5_000, generators=2)
    files.write(cfg, tmp_path / "a", chunk=1_000)
    files.write(cfg, tmp_path / "b", chunk=1_000)
    names = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.*"))
    assert len(names) == 7
    assert all(
        (tmp_path / "a" / n).read_bytes() == (tmp_path / "b" / n).read_bytes() for n in names
    )


def test_another_seed_gives_other_values_but_the_same_ids(events: generator.EventTables) -> None:
    other = generator.generate(NexmarkConfig(events=EVENTS, seed=1), 0, 0, EVENTS)
    assert other.persons.column("id").equals(events.persons.column("id"))
    assert not other.bids.column("price").equals(events.bids.column("price"))


def test_people_auctions_and_bids_come_one_three_and_forty_six_in_fifty(
    events: generator.EventTables,
) -> None:
    counts = (events.persons.num_rows, events.auctions.num_rows, events.bids.num_rows)
    assert counts == (EVENTS // 50, EVENTS // 50 * 3, EVENTS // 50 * 46)
    custom = generator.generate(NexmarkConfig(events=1_000, bid_proportion=6), 0, 0, 1_000)
    assert (custom.persons.num_rows, custom.bids.num_rows) == (100, 600)


def test_person_and_auction_ids_count_up_from_1000(events: generator.EventTables) -> None:
    for table in (events.persons, events.auctions):
        ids = table.column("id").to_numpy()
        assert (ids == np.arange(1000, 1000 + len(ids))).all()


def _newest(table: pa.Table, cfg: NexmarkConfig) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[type-arg]
    """Per event of ``table``: the newest person and auction ids when it was made."""
    # event ids back from times: 10 000 events/s, 10 events per ms would be ambiguous,
    # so recompute them the way the generator lays kinds out
    ids = np.arange(cfg.events)
    kinds = cfg.kinds(ids)
    kind = {"bids": config.BID, "auctions": config.AUCTION}[_kind_of(table)]
    mine = ids[kinds == kind]
    return cfg.last_person(mine) + 1000, cfg.last_auction(mine) + 1000


def _kind_of(table: pa.Table) -> str:
    return "bids" if "bidder" in table.column_names else "auctions"


def test_bids_go_to_the_hot_auction_and_come_from_the_hot_bidder_as_often_as_the_ratios_say(
    events: generator.EventTables,
) -> None:
    cfg = NexmarkConfig(events=EVENTS)
    person, auction = _newest(events.bids, cfg)
    hot_auction = (auction - 1000) // 100 * 100 + 1000
    hot_bidder = (person - 1000) // 100 * 100 + 1001
    bids = events.bids
    on_hot = np.mean(bids.column("auction").to_numpy() == hot_auction)
    by_hot = np.mean(bids.column("bidder").to_numpy() == hot_bidder)
    # the ratio's share, give or take sampling (sd ~0.002), plus random picks that land on it
    assert 1 - 1 / 2 - 0.01 <= on_hot < 1 - 1 / 2 + 0.03
    assert 1 - 1 / 4 - 0.01 <= by_hot < 1 - 1 / 4 + 0.03
    cold = generator.generate(
        NexmarkConfig(events=EVENTS, hot_auction_ratio=1, hot_bidders_ratio=1), 0, 0, EVENTS
    )
    assert np.mean(cold.bids.column("auction").to_numpy() == hot_auction) < 0.05


def test_auctions_are_sold_by_the_hot_seller_as_often_as_the_ratio_says(
    events: generator.EventTables,
) -> None:
    person, _ = _newest(events.auctions, NexmarkConfig(events=EVENTS))
    hot_seller = (person - 1000) // 100 * 100 + 1000
    share = np.mean(events.auctions.column("seller").to_numpy() == hot_seller)
    assert 1 - 1 / 4 - 0.02 <= share < 1 - 1 / 4 + 0.03


def test_random_picks_stay_among_active_people_and_in_flight_auctions(
    events: generator.EventTables,
) -> None:
    cfg = NexmarkConfig(events=EVENTS)
    person, auction = _newest(events.bids, cfg)
    bidder, bid_on = (
        events.bids.column("bidder").to_numpy(),
        events.bids.column("auction").to_numpy(),
    )
    assert (bidder >= np.maximum(person - cfg.num_active_people + 1, 1000)).all()
    assert (bidder <= person + config.PERSON_ID_LEAD).all()
    assert (bid_on >= np.maximum(auction - cfg.num_in_flight_auctions, 1000)).all()
    assert (bid_on <= auction + config.AUCTION_ID_LEAD).all()
    assert (bidder > person).any() and (bid_on > auction).any()  # the leads are used
    categories = set(events.auctions.column("category").to_pylist())
    assert categories == {10, 11, 12, 13, 14}


def test_generators_run_parallel_timelines_at_the_first_event_rate() -> None:
    cfg = NexmarkConfig(events=30_000, generators=3, first_event_rate=1_000)
    firsts = []
    for g in range(3):
        tables = generator.generate(cfg, g, 0, 10_000)
        times = np.concatenate([t.column("dateTime").to_numpy() for t in tables.by_kind().values()])
        assert times.min() == cfg.base_time_ms and times.max() == cfg.base_time_ms + 29_997
        firsts.append(tables.persons.column("id")[0].as_py())
    assert firsts == [1000, 1000 + 200, 1000 + 400]  # each generator owns its range of ids
    bids = generator.generate(cfg, 0, 0, 10_000).bids.column("dateTime").to_numpy()
    assert (np.diff(bids) >= 0).all()


def test_out_of_order_groups_permute_times_within_each_group() -> None:
    cfg = NexmarkConfig(events=1_000, out_of_order_group_size=10, first_event_rate=1_000)
    numbers = cfg.adjusted(np.arange(1_000))
    assert sorted(numbers.tolist()) == list(range(1_000))
    assert (numbers // 10 == np.arange(1_000) // 10).all() and (numbers != np.arange(1_000)).any()


def test_events_average_the_configured_sizes(events: generator.EventTables) -> None:
    def size(table: pa.Table) -> float:
        total = 0
        for name in table.column_names:
            column = table.column(name)
            total += (
                8 * len(column)
                if pa.types.is_integer(column.type)
                else sum(len(s) for s in column.to_pylist())
            )
        return total / table.num_rows

    assert size(events.bids) == pytest.approx(100, rel=0.05)
    assert size(events.auctions) == pytest.approx(500, rel=0.05)
    assert size(events.persons) == pytest.approx(200, rel=0.05)


def test_auctions_last_on_average_as_long_as_making_the_in_flight_auctions_takes(
    events: generator.EventTables,
) -> None:
    cfg = NexmarkConfig(events=EVENTS)
    length = (
        events.auctions.column("expires").to_numpy() - events.auctions.column("dateTime").to_numpy()
    )
    horizon = cfg.events_for_in_flight_auctions * cfg.inter_event_delay_us / 1000
    assert length.min() >= 1 and length.mean() == pytest.approx(horizon, rel=0.05)


def test_prices_are_log_uniform_cents_from_one_dollar_to_a_million(
    events: generator.EventTables,
) -> None:
    prices = events.bids.column("price").to_numpy()
    assert prices.min() >= 100 and prices.max() <= 100_000_000
    decades = np.histogram(np.log10(prices / 100), bins=6, range=(0, 6))[0] / len(prices)
    assert np.allclose(decades, 1 / 6, atol=0.02)


def test_a_bad_parameter_is_named() -> None:
    with pytest.raises(config.InvalidConfigError, match="hot_auction_ratio"):
        NexmarkConfig(hot_auction_ratio=0)
    with pytest.raises(config.InvalidConfigError, match="generator 0 makes"):
        generator.generate(NexmarkConfig(events=10), 0, 5, 11)


def test_reading_a_directory_without_events_says_to_generate_them(tmp_path: pathlib.Path) -> None:
    with pytest.raises(files.NotNexmarkDataError, match="nexmark generate"):
        files.read_config(tmp_path)
