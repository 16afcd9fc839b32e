"""The examples of ``docs/event-time.md`` run and print what the page says."""

from __future__ import annotations

import doctest
import pathlib

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "event-time.md"


def test_the_event_time_page_examples_hold() -> None:
    result = doctest.testfile(
        str(PAGE), module_relative=False, optionflags=doctest.ELLIPSIS, verbose=False
    )
    assert result.attempted > 20
    assert result.failed == 0
