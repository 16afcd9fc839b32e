"""Window assignment against brute force, batch assignment against per record, session merging."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from barrier_runtime.api import windows

times = st.integers(-(10**12), 10**12)


@st.composite
def fixed_assigners(draw: st.DrawFn) -> windows.WindowAssigner:
    size = draw(st.integers(1, 1_000))
    offset = draw(st.integers(0, 2_000))
    if draw(st.booleans()):
        return windows.Tumbling(size, offset)
    return windows.Sliding(size, draw(st.integers(1, size)), offset)


def brute_force(assigner: windows.WindowAssigner, ts: int) -> tuple[windows.Window, ...]:
    assert isinstance(assigner, windows.Tumbling | windows.Sliding)
    size, offset = assigner.size_ms, assigner.offset_ms
    slide = assigner.slide_ms if isinstance(assigner, windows.Sliding) else size
    first = ts - size - slide  # far enough back to hold every candidate start
    first -= (first - offset) % slide
    return tuple(
        windows.Window(s, s + size) for s in range(first, ts + 1, slide) if s <= ts < s + size
    )


@settings(max_examples=300, deadline=None)
@given(fixed_assigners(), times)
def test_a_record_is_in_exactly_the_windows_that_contain_it(
    assigner: windows.WindowAssigner, ts: int
) -> None:
    assert assigner.assign(ts) == brute_force(assigner, ts)


@settings(max_examples=200, deadline=None)
@given(fixed_assigners(), st.lists(times, max_size=40))
def test_batch_assignment_is_record_by_record_assignment(
    assigner: windows.WindowAssigner, stamps: list[int]
) -> None:
    rows, starts = assigner.assign_starts(np.array(stamps, dtype=np.int64))
    expected = [(i, w.start) for i, ts in enumerate(stamps) for w in assigner.assign(ts)]
    assert list(zip(rows.tolist(), starts.tolist(), strict=True)) == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 500), max_size=30), st.integers(1, 40))
def test_sessions_merge_into_disjoint_windows_that_cover_every_record(
    stamps: list[int], gap: int
) -> None:
    assigner = windows.Session(gap)
    sessions: list[windows.Window] = []
    for ts in stamps:
        (new,) = assigner.assign(ts)
        merged, absorbed = windows.merge_session(sessions, new)
        sessions = sorted([w for w in sessions if w not in absorbed] + [merged])
    for a, b in itertools.pairwise(sessions):
        assert a.end < b.start, "sessions stay apart by more than touching"
    for ts in stamps:
        assert sum(w.start <= ts < w.end for w in sessions) == 1
    # the reference: sort the times, split where the gap to the previous is >= gap
    expected: list[windows.Window] = []
    for ts in sorted(stamps):
        if expected and ts <= expected[-1].end:
            expected[-1] = windows.Window(expected[-1].start, max(expected[-1].end, ts + gap))
        else:
            expected.append(windows.Window(ts, ts + gap))
    assert sessions == expected
