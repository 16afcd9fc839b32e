"""What a keyed process function sees: its key, event time, watermark, and its key's timers.

>>> from barrier_runtime.api import Dataflow
>>> from barrier_runtime.api.watermarks import BoundedOutOfOrderness
>>> from barrier_runtime.testing import TestingSink, TestingSource
>>> def remember(state, record, ctx):       # flush a key 10 s of event time after its first record
...     if state is None:
...         ctx.register_event_time_timer(ctx.timestamp + 10_000)
...     return (state or 0) + 1, ()
>>> def flush(state, timer, ctx):
...     return None, ({"key": ctx.key, "count": state, "at": timer.time},)
>>> flow = Dataflow("flush")
>>> events = flow.source("in", TestingSource([{"k": "a", "ts": 1}]), timestamps="ts",
...                      watermarks=BoundedOutOfOrderness(0))
>>> events.key_by("by-k", "k").process("flush", remember, flush, timestamps="ts") \\
...     .sink("out", TestingSink())
>>> flow.validate()
"""

from __future__ import annotations

import abc
from typing import Any


class ProcessContext(abc.ABC):
    """The current key's view of time and timers, valid during one call."""

    @property
    @abc.abstractmethod
    def key(self) -> Any:
        """The key of the record or timer being handled."""

    @property
    @abc.abstractmethod
    def timestamp(self) -> int | None:
        """The record's event time (ms) with ``timestamps=``; a timer's time in ``on_timer``."""

    @property
    @abc.abstractmethod
    def watermark(self) -> int:
        """The step's current input watermark (ms)."""

    @property
    @abc.abstractmethod
    def processing_time(self) -> int:
        """Now, in ms since the epoch (the clock the runtime was given)."""

    @abc.abstractmethod
    def register_event_time_timer(self, time: int) -> None:
        """Call ``on_timer`` for this key once the watermark reaches ``time``."""

    @abc.abstractmethod
    def register_processing_time_timer(self, time: int) -> None:
        """Call ``on_timer`` for this key once ``processing_time`` reaches ``time``."""

    @abc.abstractmethod
    def delete_event_time_timer(self, time: int) -> None: ...

    @abc.abstractmethod
    def delete_processing_time_timer(self, time: int) -> None: ...
