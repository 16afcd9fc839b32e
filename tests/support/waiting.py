"""Waiting in tests: poll a condition until it holds, never sleep and hope.

:func:`wait_until` is the one way tests wait for something to happen (a pod to
start, a checkpoint to complete, a queue to fill). It returns the condition's
truthy value, so a wait can also fetch what it waited for, and on timeout it
raises :class:`WaitTimeout` naming what it waited for and the last value it
saw.

>>> items = []
>>> items.append(3)
>>> wait_until(lambda: items and items[0], 1.0, "the first item")
3
>>> wait_until(lambda: len(items) > 1, 0.01, "a second item", interval=0.001)
Traceback (most recent call last):
...
waiting.WaitTimeout: timed out after 0.01s waiting for a second item; last seen: False
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_REPR_LIMIT = 500


class WaitTimeout(AssertionError, TimeoutError):
    """A condition did not hold in time: a test failure (``AssertionError``) that
    ``except TimeoutError`` also catches."""


def wait_until(
    condition: Callable[[], T | None],
    timeout: float,
    what: str,
    *,
    interval: float = 0.05,
    ignoring: tuple[type[BaseException], ...] = (),
    explain: Callable[[], str] | None = None,
) -> T:
    """Poll ``condition`` every ``interval`` seconds until it returns something truthy, and
    return that.

    ``ignoring``: exceptions that count as "not yet" (say ``OSError`` while a server
    starts). After ``timeout`` seconds raises :class:`WaitTimeout` naming ``what``, the
    last value or ignored exception seen, and what ``explain()`` says about the state.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except ignoring as exc:
            last = f"{type(exc).__name__}: {exc}"
        else:
            if value:
                return value
            last = repr(value)
        if time.monotonic() >= deadline:
            if len(last) > _REPR_LIMIT:
                last = last[:_REPR_LIMIT] + "..."
            message = f"timed out after {timeout:g}s waiting for {what}; last seen: {last}"
            if explain is not None:
                message += "\n" + explain()
            raise WaitTimeout(message)
        time.sleep(interval)
