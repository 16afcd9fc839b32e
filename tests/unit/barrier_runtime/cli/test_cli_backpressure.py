"""The status line's back-pressure: Flink's share of time back-pressured, per subtask.

Per task (a chain of steps run as P subtasks) the driver sums the seconds its
subtasks waited for downstream capacity; the figure divides by P as well as by
the interval, and the job reads as its most back-pressured task.
"""

from __future__ import annotations

from barrier_runtime.cli import status_figures


def test_three_subtasks_each_waiting_a_tenth_of_the_time_read_ten_percent() -> None:
    """Summed over three source subtasks, 0.5 s of waiting in 5 s each is 1.5 s: 10 %, not the
    30 % (or, with more workers, 100 %) a division by the number of tasks alone gives."""
    before = {"src": 2.0, "sink": 0.0}
    after = {"src": 3.5, "sink": 0.0}
    assert status_figures.backpressure(before, after, span=5.0, parallelism=3) == 0.1


def test_the_most_back_pressured_task_sets_the_figure() -> None:
    after = {"src": 6.0, "map": 1.5, "sink": 0.0}  # src: all 2 subtasks 60 %, map: 15 %
    assert status_figures.backpressure({}, after, span=5.0, parallelism=2) == 0.6


def test_a_job_that_keeps_up_reads_zero_even_after_a_worker_took_its_seconds_with_it() -> None:
    """A killed worker's counters are gone: the sum can go down; that is no back-pressure."""
    assert status_figures.backpressure({"src": 4.0}, {"src": 1.0}, span=5.0, parallelism=2) == 0
    assert status_figures.backpressure({}, {}, span=5.0, parallelism=2) == 0
