"""The watermark of one source subtask: a generator per partition, idleness, the minimum.

Each partition the subtask reads has its own generator (made by the source's
:class:`~barrier_runtime.api.watermarks.WatermarkStrategy`), fed with the event
times of the batches it returns. The subtask's watermark is the minimum over
its *active* partitions, emitted only when it rises:

* a partition that has returned nothing for the strategy's ``idle_timeout``
  (processing time) is *idle* and left out; its next batch makes it active;
* a finished partition holds nothing back (it counts as ``MAX_WATERMARK``);
* a partition *waiting* for its turn (the source has not started it, e.g. a
  file beyond ``FileSource``'s ``max_open_files``) holds nothing back either
  until it starts; if every unfinished partition waits, the watermark stays;
* when every unfinished partition is idle the subtask is idle, and says so
  downstream, so a downstream minimum does not wait for it;
* a subtask that reads no partition at all is idle from the start.

A partition idle since the last emission may come back below the watermark
already emitted: its records are then late downstream, as in Flink.

Checkpoints
    :meth:`SourceWatermarks.snapshot` gives each partition's generator state
    and the watermark emitted, as JSON to store next to the partition's
    position. After a restore the subtask first re-emits the restored
    watermark (the smallest over the partitions it now reads), so a restore
    never goes back in time.

Threading: the source subtask's thread only; time is passed in (``now``).

>>> from barrier_runtime.api import watermarks
>>> strategy = watermarks.BoundedOutOfOrderness(0).with_idleness(5.0)
>>> wm = SourceWatermarks(strategy, ["p0", "p1"], now=0.0)
>>> wm.observe("p0", [100], now=1.0)
>>> wm.poll(now=1.0)                     # p1 has said nothing yet
Output(watermark=None, idle=None)
>>> wm.observe("p1", [50], now=1.0)
>>> wm.poll(now=1.0)
Output(watermark=49, idle=None)
>>> wm.observe("p0", [300], now=5.0)
>>> wm.poll(now=6.5)                     # p1 silent for 5.5 s: idle, p0 alone decides
Output(watermark=299, idle=None)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from barrier_runtime.alignment.watermark_valve import Output
from barrier_runtime.api import watermarks


@dataclasses.dataclass(slots=True)
class _Partition:
    generator: watermarks.WatermarkGenerator
    last_active: float
    idle: bool = False
    finished: bool = False


class SourceWatermarks:
    """Per-partition generators and idleness of one source subtask; see the module essay."""

    def __init__(
        self,
        strategy: watermarks.WatermarkStrategy,
        partitions: Sequence[str],
        *,
        now: float,
        restored: Mapping[str, Any] | None = None,
    ) -> None:
        self._timeout = strategy.idle_timeout
        self._parts: dict[str, _Partition] = {}
        restored = restored or {}
        emitted = []
        for name in partitions:
            generator = strategy.create_generator()
            state = restored.get(name)
            if state is not None:
                if state.get("generator") is not None:
                    generator.restore(state["generator"])
                emitted.append(int(state.get("emitted", watermarks.MIN_WATERMARK)))
            self._parts[name] = _Partition(generator, now)
        self._emitted = min(emitted, default=watermarks.MIN_WATERMARK)
        self._restored = bool(emitted)
        self._idle = False

    @property
    def current(self) -> int:
        """The last watermark emitted (or restored)."""
        return self._emitted

    def observe(self, partition: str, timestamps: Iterable[int], *, now: float) -> None:
        """``partition`` returned records with these event times."""
        part = self._parts[partition]
        part.generator.on_events(timestamps)
        part.last_active = now
        part.idle = False

    def finished(self, partition: str) -> None:
        """``partition`` is exhausted: it holds nothing back any more."""
        self._parts[partition].finished = True

    def poll(self, *, now: float, waiting: Collection[str] = ()) -> Output:
        """What to emit now: a higher watermark, a change of idle status, both, or nothing.

        ``waiting``: the partitions not started yet. The first poll after a
        restore emits the restored watermark.
        """
        if self._timeout is not None:
            for part in self._parts.values():
                if not part.finished and now - part.last_active >= self._timeout:
                    part.idle = True
        live = [p for n, p in self._parts.items() if not p.finished and n not in waiting]
        active = [p for p in live if not p.idle]
        idle = (bool(live) and not active) or not self._parts
        if all(p.finished for p in self._parts.values()) and self._parts:
            candidate = watermarks.MAX_WATERMARK
        elif active:
            candidate = min(p.generator.current_watermark() for p in active)
        else:
            candidate = self._emitted
        watermark = None
        if candidate > self._emitted or self._restored:
            watermark = max(candidate, self._emitted)
            self._emitted = watermark
            self._restored = False
        if watermark == watermarks.MIN_WATERMARK:
            watermark = None
        status = None
        if idle != self._idle:
            self._idle = idle
            status = idle
        return Output(watermark, status)

    def snapshot(self) -> dict[str, Any]:
        """Per partition: generator state and the watermark emitted (JSON)."""
        return {
            name: {"generator": part.generator.snapshot(), "emitted": self._emitted}
            for name, part in self._parts.items()
        }
