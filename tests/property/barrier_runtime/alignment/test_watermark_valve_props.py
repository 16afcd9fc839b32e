"""Random watermark, idleness and end-of-partition events on 1-5 channels of a valve.

Named predicates over what the valve emits:

* ``rises``: every emitted watermark is above the previous one;
* ``waits_for_every_active_channel``: without idleness, the output is the
  minimum of the channels' highest watermarks (once all have sent one);
* ``never_passes_an_aligned_channel``: an emitted watermark is never above the
  watermark of a channel that has been active and at or above the output ever since;
* ``ends_at_the_maximum``: once every channel is closed the output is the maximum;
* ``restores_to_the_same_future``: without idleness, a valve restored from a
  snapshot taken at any point emits exactly what the original emits from there on.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from barrier_runtime.alignment.watermark_valve import Output, WatermarkValve
from barrier_runtime.api.watermarks import MAX_WATERMARK, MIN_WATERMARK

Event = tuple[str, int, int]


@st.composite
def scenarios(draw: st.DrawFn, *, idleness: bool) -> tuple[int, list[Event]]:
    channels = draw(st.integers(1, 5))
    kinds = ["wm"] * 6 + (["idle", "active"] if idleness else []) + ["close"]
    event = st.tuples(st.sampled_from(kinds), st.integers(0, channels - 1), st.integers(-50, 1_000))
    return channels, draw(st.lists(event, max_size=60))


def apply(valve: WatermarkValve, closed: set[int], event: Event) -> Output:
    kind, ch, value = event
    if ch in closed:
        return Output()
    if kind == "wm":
        return valve.watermark(ch, value)
    if kind == "close":
        closed.add(ch)
        return valve.closed(ch)
    return valve.status(ch, idle=kind == "idle")


@settings(max_examples=400, deadline=None)
@given(scenarios(idleness=True))
def test_rises_and_never_passes_an_aligned_channel(scenario: tuple[int, list[Event]]) -> None:
    channels, events = scenario
    valve, closed = WatermarkValve(channels), set[int]()
    highest = [MIN_WATERMARK] * channels
    steady = [True] * channels  # active and at or above the output since it last caught up
    last = MIN_WATERMARK
    for event in events:
        kind, ch, value = event
        before = valve.current
        out = apply(valve, closed, event)
        if ch not in closed or kind == "close":
            if kind == "wm":
                highest[ch] = max(highest[ch], value)
            elif kind == "close":
                highest[ch] = MAX_WATERMARK
            if kind == "idle":
                steady[ch] = False
            elif highest[ch] >= before:
                steady[ch] = True
        if out.watermark is not None:
            assert out.watermark > last, "rises"
            last = out.watermark
            for c in range(channels):
                if steady[c]:
                    assert out.watermark <= highest[c], "never_passes_an_aligned_channel"
        assert valve.current == last
    if len(closed) == channels:
        assert valve.current == MAX_WATERMARK, "ends_at_the_maximum"


@settings(max_examples=400, deadline=None)
@given(scenarios(idleness=False))
def test_waits_for_every_active_channel(scenario: tuple[int, list[Event]]) -> None:
    channels, events = scenario
    valve, closed = WatermarkValve(channels), set[int]()
    highest = [MIN_WATERMARK] * channels
    for event in events:
        kind, ch, value = event
        if ch not in closed:
            highest[ch] = MAX_WATERMARK if kind == "close" else max(highest[ch], value)
        apply(valve, closed, event)
        assert valve.current == min(highest), "waits_for_every_active_channel"


@settings(max_examples=300, deadline=None)
@given(scenarios(idleness=False), st.data())
def test_restores_to_the_same_future(
    scenario: tuple[int, list[Event]], data: st.DataObject
) -> None:
    channels, events = scenario
    cut = data.draw(st.integers(0, len(events)))
    original, closed = WatermarkValve(channels), set[int]()
    for event in events[:cut]:
        apply(original, closed, event)
    restored = WatermarkValve(channels)
    restored.restore([original.snapshot()])
    closed_again = set(closed)
    for event in events[cut:]:
        assert apply(restored, closed_again, event) == apply(original, closed, event)
