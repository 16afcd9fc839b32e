"""The watermark valve: one watermark and one idle status out of many input channels.

Every step with input channels combines what its channels say about event
time (Flink's ``StatusWatermarkValve`` does the same):

States of a channel
    *active* or *idle*, and its last watermark. A channel that sends a
    watermark is active; the sender marks it idle when every partition behind
    it has gone quiet (and active again before its next record). A closed
    channel (end of partition) is active at ``MAX_WATERMARK``.

Aligned channels
    An active channel whose watermark is at least the valve's output. A
    channel that comes back from idleness below the output is left out of the
    minimum until it catches up, so the output never waits for, nor goes back
    to, a channel that was idle while time moved on.

Output
    The minimum watermark over aligned channels, emitted only when it rises;
    *idle* when every channel is idle, *active* again as soon as one is not.

Checkpoints
    :meth:`WatermarkValve.snapshot` keeps the output and each channel's
    watermark. :meth:`WatermarkValve.restore` puts the channels back when the
    layout is the same; otherwise (a new parallelism) every channel starts at
    the restored output. A restored valve never emits less than it had, so a
    record that was late before a failure is late after it.

>>> valve = WatermarkValve(2)
>>> valve.watermark(0, 100)                # channel 1 has promised nothing yet
Output(watermark=None, idle=None)
>>> valve.watermark(1, 50)
Output(watermark=50, idle=None)
>>> valve.status(1, idle=True)             # left out: channel 0 alone decides
Output(watermark=100, idle=None)
>>> valve.status(0, idle=True)
Output(watermark=None, idle=True)
>>> valve.watermark(1, 70)                 # back, but below the output: not aligned
Output(watermark=None, idle=False)
"""

from __future__ import annotations

import dataclasses
from typing import Any

from barrier_runtime.api.watermarks import MAX_WATERMARK, MIN_WATERMARK


@dataclasses.dataclass(frozen=True, slots=True)
class Output:
    """What changed at the valve's output: a new watermark, a new idle status, or both."""

    watermark: int | None = None
    idle: bool | None = None

    def __bool__(self) -> bool:
        return self.watermark is not None or self.idle is not None


@dataclasses.dataclass(slots=True)
class _Channel:
    watermark: int = MIN_WATERMARK
    idle: bool = False
    aligned: bool = True


class WatermarkValve:
    """Combines ``channels`` input channels; see the module essay."""

    def __init__(self, channels: int) -> None:
        if channels < 1:
            raise ValueError("a watermark valve needs at least one channel")
        self._channels = [_Channel() for _ in range(channels)]
        self._output = MIN_WATERMARK
        self._idle = False

    @property
    def current(self) -> int:
        """The last watermark emitted (``MIN_WATERMARK`` before any)."""
        return self._output

    @property
    def idle(self) -> bool:
        return self._idle

    def watermark(self, channel: int, value: int) -> Output:
        """Channel ``channel`` sent watermark ``value`` (which marks it active)."""
        ch = self._channels[channel]
        woke = ch.idle
        ch.idle = False
        ch.watermark = max(ch.watermark, value)
        if not ch.aligned and ch.watermark >= self._output:
            ch.aligned = True
        return Output(self._advance(), self._update_idle() if woke else None)

    def status(self, channel: int, *, idle: bool) -> Output:
        """Channel ``channel`` became idle (``idle=True``) or active again."""
        ch = self._channels[channel]
        if ch.idle == idle:
            return Output()
        ch.idle = idle
        if idle:
            ch.aligned = False
            return Output(self._advance(), self._update_idle())
        ch.aligned = ch.watermark >= self._output
        return Output(None, self._update_idle())

    def closed(self, channel: int) -> Output:
        """Channel ``channel`` ended: it holds nothing back any more."""
        return self.watermark(channel, MAX_WATERMARK)

    def snapshot(self) -> dict[str, Any]:
        """JSON: the output and each channel's watermark."""
        return {"output": self._output, "channels": [c.watermark for c in self._channels]}

    def restore(self, snapshots: list[dict[str, Any]]) -> None:
        """Resume from the snapshots of the subtasks whose state this subtask takes over.

        One snapshot with the same number of channels: channels as they were.
        Otherwise every channel starts at the smallest restored output.
        """
        if not snapshots:
            return
        output = min(int(s["output"]) for s in snapshots)
        same = len(snapshots) == 1 and len(snapshots[0]["channels"]) == len(self._channels)
        for i, ch in enumerate(self._channels):
            ch.watermark = int(snapshots[0]["channels"][i]) if same else output
            ch.idle = False
            ch.aligned = ch.watermark >= output
        self._output = output

    def _advance(self) -> int | None:
        aligned = [c.watermark for c in self._channels if c.aligned and not c.idle]
        if not aligned:
            return None
        low = min(aligned)
        if low <= self._output:
            return None
        self._output = low
        for ch in self._channels:
            if not ch.idle and not ch.aligned and ch.watermark >= low:
                ch.aligned = True
        return low

    def _update_idle(self) -> bool | None:
        idle = all(c.idle for c in self._channels)
        if idle == self._idle:
            return None
        self._idle = idle
        return idle
