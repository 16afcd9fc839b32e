"""The shared test helper ``waiting.wait_until`` (``tests/support/waiting.py``)."""

from __future__ import annotations

import doctest
import itertools
from collections.abc import Iterator

import pytest
import waiting


def test_returns_the_first_truthy_value() -> None:
    values: Iterator[object] = iter([None, 0, [], {"ready": True}])
    assert waiting.wait_until(lambda: next(values), 5, "a value", interval=0) == {"ready": True}


def test_times_out_naming_what_and_the_last_value_seen() -> None:
    counter = itertools.count()
    with pytest.raises(waiting.WaitTimeout) as info:
        waiting.wait_until(lambda: next(counter) < 0, 0.05, "a negative count", interval=0.01)
    message = str(info.value)
    assert "waiting for a negative count" in message and "last seen: False" in message
    assert isinstance(info.value, AssertionError) and isinstance(info.value, TimeoutError)


def test_ignored_exceptions_count_as_not_yet_and_are_reported() -> None:
    attempts = itertools.count()

    def flaky() -> bool:
        if next(attempts) < 3:
            raise ConnectionRefusedError("not listening yet")
        return True

    assert waiting.wait_until(flaky, 5, "the server", interval=0, ignoring=(OSError,))
    with pytest.raises(waiting.WaitTimeout, match="ConnectionRefusedError: down\nstate: bad"):
        waiting.wait_until(
            lambda: (_ for _ in ()).throw(ConnectionRefusedError("down")),
            0.02,
            "the server",
            interval=0.01,
            ignoring=(OSError,),
            explain=lambda: "state: bad",
        )


def test_other_exceptions_propagate_at_once() -> None:
    with pytest.raises(KeyError):
        waiting.wait_until(lambda: dict[str, int]()["missing"], 5, "a key")


def test_docstring_examples() -> None:
    result = doctest.testmod(waiting, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
