"""A source subtask's watermark: minimum over active partitions, idleness, end, restore."""

from __future__ import annotations

from barrier_runtime.alignment.watermark_valve import Output
from barrier_runtime.api import watermarks
from barrier_runtime.task.source_watermarks import SourceWatermarks

BOUNDED = watermarks.BoundedOutOfOrderness(10)


def test_the_watermark_waits_for_every_partition_then_follows_the_slowest() -> None:
    wm = SourceWatermarks(BOUNDED, ["a", "b"], now=0)
    wm.observe("a", [1_000], now=0)
    assert wm.poll(now=0) == Output()
    wm.observe("b", [500, 700], now=0)
    assert wm.poll(now=0) == Output(watermark=689)
    wm.observe("b", [2_000], now=0)
    assert wm.poll(now=0) == Output(watermark=989)
    assert wm.poll(now=0) == Output()  # nothing new


def test_without_an_idleness_timeout_a_silent_partition_holds_everything_back() -> None:
    wm = SourceWatermarks(BOUNDED, ["a", "b"], now=0)
    wm.observe("a", [1_000], now=0)
    assert wm.poll(now=3_600) == Output()


def test_an_idle_partition_is_left_out_and_all_idle_makes_the_subtask_idle() -> None:
    wm = SourceWatermarks(BOUNDED.with_idleness(2), ["a", "b"], now=0)
    wm.observe("a", [1_000], now=1)
    assert wm.poll(now=2.5) == Output(watermark=989)  # b silent since 0
    assert wm.poll(now=3.5) == Output(idle=True)  # a silent since 1
    wm.observe("b", [5_000], now=4)
    assert wm.poll(now=4) == Output(watermark=4_989, idle=False)


def test_finished_partitions_hold_nothing_back_and_all_finished_is_the_maximum() -> None:
    wm = SourceWatermarks(BOUNDED, ["a", "b"], now=0)
    wm.observe("a", [100], now=0)
    wm.finished("b")
    assert wm.poll(now=0) == Output(watermark=89)
    wm.finished("a")
    assert wm.poll(now=0) == Output(watermark=watermarks.MAX_WATERMARK)


def test_a_subtask_without_partitions_is_idle_from_the_start() -> None:
    assert SourceWatermarks(BOUNDED, [], now=0).poll(now=0) == Output(idle=True)


def test_a_restore_re_emits_the_watermark_first_and_never_goes_back() -> None:
    wm = SourceWatermarks(BOUNDED, ["a", "b"], now=0)
    wm.observe("a", [1_000], now=0)
    wm.observe("b", [2_000], now=0)
    assert wm.poll(now=0) == Output(watermark=989)
    saved = wm.snapshot()
    again = SourceWatermarks(BOUNDED, ["a", "b"], now=0, restored=saved)
    assert again.poll(now=0) == Output(watermark=989)
    again.observe("a", [500], now=0)  # replayed records after the position
    assert again.poll(now=0) == Output()
    # at another parallelism: only b here, its generator state and the old watermark
    alone = SourceWatermarks(BOUNDED, ["b"], now=0, restored={"b": saved["b"]})
    assert alone.poll(now=0) == Output(watermark=1_989)


def test_a_partition_waiting_for_its_turn_holds_nothing_back_until_it_starts() -> None:
    wm = SourceWatermarks(BOUNDED, ["a", "b"], now=0)
    wm.observe("a", [1_000], now=0)
    assert wm.poll(now=0, waiting=["b"]) == Output(watermark=989)
    wm.finished("a")
    # b starts now: it holds the watermark until it has said something, then leads it
    assert wm.poll(now=0) == Output()
    wm.observe("b", [3_000], now=0)
    assert wm.poll(now=0) == Output(watermark=2_989)


def test_when_every_unfinished_partition_waits_the_watermark_stays_and_is_not_idle() -> None:
    wm = SourceWatermarks(BOUNDED.with_idleness(1), ["a", "b"], now=0)
    wm.observe("a", [1_000], now=0)
    wm.finished("a")
    assert wm.poll(now=0, waiting=["b"]) == Output()
    assert wm.poll(now=0.5, waiting=["b"]) == Output()
