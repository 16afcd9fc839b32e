"""The watermark valve: minimum over aligned channels, idleness, end of partition, restore."""

from __future__ import annotations

from barrier_runtime.alignment.watermark_valve import Output, WatermarkValve
from barrier_runtime.api.watermarks import MAX_WATERMARK


def test_the_output_is_the_minimum_and_only_rises() -> None:
    valve = WatermarkValve(3)
    assert valve.watermark(0, 10) == Output()
    assert valve.watermark(1, 20) == Output()
    assert valve.watermark(2, 5) == Output(watermark=5)
    assert valve.watermark(2, 30) == Output(watermark=10)
    assert valve.watermark(0, 8) == Output()  # a channel going back changes nothing
    assert valve.current == 10


def test_an_idle_channel_is_left_out_and_all_idle_makes_the_output_idle() -> None:
    valve = WatermarkValve(2)
    valve.watermark(0, 100)
    assert valve.status(1, idle=True) == Output(watermark=100)
    assert valve.status(0, idle=True) == Output(idle=True)
    assert valve.idle
    assert valve.status(0, idle=False) == Output(idle=False)
    assert valve.status(0, idle=False) == Output()  # no news


def test_a_channel_back_from_idleness_below_the_output_waits_until_it_catches_up() -> None:
    valve = WatermarkValve(2)
    valve.watermark(0, 50)
    valve.status(1, idle=True)
    assert valve.watermark(0, 100) == Output(watermark=100)
    assert valve.watermark(1, 70) == Output()  # active again, not aligned: 0 alone decides
    assert valve.watermark(0, 120) == Output(watermark=120)
    assert valve.watermark(1, 130) == Output()  # aligned again; the minimum is 120
    assert valve.watermark(0, 200) == Output(watermark=130)


def test_a_closed_channel_holds_nothing_back_and_all_closed_gives_the_maximum() -> None:
    valve = WatermarkValve(2)
    valve.watermark(0, 10)
    assert valve.closed(1) == Output(watermark=10)
    assert valve.closed(0) == Output(watermark=MAX_WATERMARK)


def test_restore_with_the_same_layout_puts_every_channel_back() -> None:
    valve = WatermarkValve(2)
    valve.watermark(0, 40)
    valve.watermark(1, 30)
    again = WatermarkValve(2)
    again.restore([valve.snapshot()])
    assert again.current == 30
    assert again.watermark(1, 50) == valve.watermark(1, 50) == Output(watermark=40)


def test_restore_at_another_parallelism_starts_every_channel_at_the_smallest_output() -> None:
    old = [WatermarkValve(2), WatermarkValve(2)]
    old[0].watermark(0, 40), old[0].watermark(1, 40)
    old[1].watermark(0, 35), old[1].watermark(1, 60)
    new = WatermarkValve(3)
    new.restore([v.snapshot() for v in old])
    assert new.current == 35
    # a fresh channel cannot pull the output back, nor let it jump past the others
    assert new.watermark(0, 500) == Output()
    assert new.watermark(1, 500) == Output()
    assert new.watermark(2, 36) == Output(watermark=36)
