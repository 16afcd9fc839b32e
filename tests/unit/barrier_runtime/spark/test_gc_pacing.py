"""A worker paces young collections while it hosts slices, and restores the pacing after the last."""

import gc
import threading

from barrier_runtime.spark import gc_pacing


def test_nested_slices_keep_the_pacing_until_the_last_one_ends() -> None:
    before = gc.get_threshold()
    first_in = threading.Event()
    first_may_leave = threading.Event()
    seen: list[tuple[int, int, int]] = []

    def first() -> None:
        with gc_pacing.paced():
            first_in.set()
            first_may_leave.wait(10)
        seen.append(gc.get_threshold())

    thread = threading.Thread(target=first)
    thread.start()
    assert first_in.wait(10)
    with gc_pacing.paced():
        assert gc.get_threshold() == (gc_pacing.YOUNG_THRESHOLD, before[1], before[2])
        first_may_leave.set()
        thread.join(10)
        assert seen == [(gc_pacing.YOUNG_THRESHOLD, before[1], before[2])]  # still paced
    assert gc.get_threshold() == before


def test_a_higher_threshold_already_set_is_kept() -> None:
    before = gc.get_threshold()
    gc.set_threshold(gc_pacing.YOUNG_THRESHOLD * 2, before[1], before[2])
    try:
        with gc_pacing.paced():
            assert gc.get_threshold()[0] == gc_pacing.YOUNG_THRESHOLD * 2
    finally:
        gc.set_threshold(*before)
