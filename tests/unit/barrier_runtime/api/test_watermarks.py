"""Watermark strategies and reading event times: the values, the errors, the restore."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import event_time, watermarks

MIN = watermarks.MIN_WATERMARK


def test_bounded_watermark_is_newest_minus_bound_minus_one_and_never_falls() -> None:
    gen = watermarks.BoundedOutOfOrderness(100).create_generator()
    assert gen.current_watermark() == MIN
    gen.on_events(np.array([1_000, 900, 1_050], dtype=np.int64))
    assert gen.current_watermark() == 949
    gen.on_event(500)  # an old record does not lower it
    assert gen.current_watermark() == 949
    gen.on_events([])  # nor does an empty batch
    assert gen.current_watermark() == 949


def test_monotonous_is_a_bound_of_zero() -> None:
    gen = watermarks.monotonous().create_generator()
    gen.on_events([5, 6])
    assert gen.current_watermark() == 5


def test_a_restored_generator_resumes_where_the_snapshot_was() -> None:
    strategy = watermarks.BoundedOutOfOrderness(10)
    first = strategy.create_generator()
    first.on_events([100, 300])
    second = strategy.create_generator()
    second.restore(first.snapshot())
    second.on_event(200)
    assert second.current_watermark() == first.current_watermark() == 289


def test_garbage_generator_state_is_refused_with_what_was_expected() -> None:
    gen = watermarks.BoundedOutOfOrderness(10).create_generator()
    with pytest.raises(watermarks.InvalidWatermarkStateError, match="maxSeen"):
        gen.restore({"maxSeen": "yesterday"})


@pytest.mark.parametrize("bound", [-1, 1.5, True, "10"])
def test_a_bound_that_is_not_a_non_negative_int_is_refused(bound: object) -> None:
    with pytest.raises(ValueError, match="max_out_of_orderness_ms"):
        watermarks.BoundedOutOfOrderness(bound)  # type: ignore[arg-type]


def test_idleness_is_a_positive_number_of_seconds_on_any_strategy() -> None:
    assert watermarks.monotonous().with_idleness(2).idle_timeout == 2.0
    custom = watermarks.CustomWatermarks(lambda: watermarks.monotonous().create_generator())
    assert custom.with_idleness(0.5).idle_timeout == 0.5
    with pytest.raises(ValueError, match="positive"):
        watermarks.monotonous().with_idleness(0)


def test_a_custom_factory_that_makes_no_generator_is_named_in_the_error() -> None:
    strategy = watermarks.CustomWatermarks(object, "broken")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"'broken'.*not a WatermarkGenerator"):
        strategy.create_generator()


@pytest.mark.parametrize(
    ("unit", "raw", "ms"),
    [("s", [2, -1], [2000, -1000]), ("us", [1_500_999, -1], [1500, -1]), ("ns", [3_000_000], [3])],
)
def test_timestamp_columns_of_any_unit_become_floored_milliseconds(
    unit: str, raw: list[int], ms: list[int]
) -> None:
    arrow = pa.record_batch({"ts": pa.array(raw, pa.timestamp(unit, tz="UTC"))})
    assert event_time.timestamps_of(batch_mod.Batch.from_arrow(arrow), "ts").tolist() == ms


def test_rows_read_by_column_accept_ints_and_datetimes_naive_as_utc() -> None:
    rows = [
        {"ts": 5},
        {"ts": datetime.datetime(1970, 1, 1, 0, 0, 1)},
        {
            "ts": datetime.datetime(
                1970, 1, 1, 1, 0, 2, tzinfo=datetime.timezone(datetime.timedelta(hours=1))
            )
        },
    ]
    got = event_time.timestamps_of(batch_mod.Batch.from_rows(rows), "ts")
    assert got.tolist() == [5, 1000, 2000]


def test_a_null_event_time_names_the_record() -> None:
    arrow = pa.record_batch({"ts": pa.array([1, None], pa.int64()), "id": ["a", "b"]})
    with pytest.raises(event_time.EventTimeError, match="null") as caught:
        event_time.timestamps_of(batch_mod.Batch.from_arrow(arrow), "ts")
    assert caught.value.record == {"ts": None, "id": "b"}


def test_a_missing_or_wrongly_typed_column_says_what_to_use() -> None:
    arrow = pa.record_batch({"ts": ["noon"]})
    with pytest.raises(event_time.EventTimeError, match="no event-time column 'when'"):
        event_time.timestamps_of(batch_mod.Batch.from_arrow(arrow), "when")
    with pytest.raises(event_time.EventTimeError, match="integer of ms since the epoch"):
        event_time.timestamps_of(batch_mod.Batch.from_arrow(arrow), "ts")


def test_a_timestamp_function_that_fails_or_returns_a_non_int_names_the_record() -> None:
    rows = batch_mod.Batch.from_rows([{"t": 1}, {"t": "x"}])
    with pytest.raises(event_time.EventTimeError, match="'x'") as caught:
        event_time.timestamps_of(rows, lambda r: r["t"])
    assert caught.value.record == {"t": "x"}
    with pytest.raises(event_time.EventTimeError, match="KeyError"):
        event_time.timestamps_of(rows, lambda r: r["missing"])
