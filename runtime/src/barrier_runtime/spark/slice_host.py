"""The slice a worker hosts: its subtasks' threads and their channels to other slices.

:class:`NetworkChannels` gives :func:`~barrier_runtime.task.attempt.build_subtasks`
the channel ends to and from subtasks of other slices over the worker's
network; :class:`Running` starts the slice's subtasks on threads and wakes
the worker's supervisor (step 6 of :mod:`~barrier_runtime.spark.worker`) as
each leaves.
"""

from __future__ import annotations

import threading

from barrier_runtime.channels import network as network_mod
from barrier_runtime.task import attempt as attempt_mod
from barrier_runtime.task import channel as channel_mod
from barrier_runtime.task import subtask as subtask_mod

RESTORE_POLL = 0.05
"""Seconds between looks at the subtasks' restores (a failure wakes the wait at once)."""


class NetworkChannels:
    """:class:`~barrier_runtime.task.attempt.RemoteChannels` over a worker's network."""

    def __init__(self, net: network_mod.WorkerNetwork) -> None:
        self._net = net

    def input(
        self, channel_id: int, sender_slice: int, receiver: channel_mod.Signal, capacity: int
    ) -> channel_mod.InputChannel:
        return self._net.input_channel(channel_id, sender_slice, receiver, capacity)

    def output(
        self, channel_id: int, receiver_slice: int, sender: channel_mod.Signal
    ) -> channel_mod.OutputChannel:
        return self._net.output_channel(channel_id, receiver_slice, sender)


class Running:
    """The subtasks' threads, started; each wakes the supervisor as it leaves.

    Step 6 waits for the last of them, so it must not learn of their end by
    polling (``Thread.is_alive`` turns false only after the thread's last
    notification, which would leave the worker asleep for a metrics interval).
    """

    def __init__(
        self, subtasks: list[subtask_mod.Subtask], ctx: attempt_mod.AttemptContext, attempt: int
    ) -> None:
        self._ctx = ctx
        self._left = len(subtasks)
        self.threads = [
            threading.Thread(target=self._run, args=(s,), name=f"{s.key}-a{attempt}", daemon=True)
            for s in subtasks
        ]
        for t in self.threads:
            t.start()

    def wait_restored(self, subtasks: list[subtask_mod.Subtask]) -> None:
        """Until every subtask has restored its state (or the attempt stops: supervision
        then takes over); raises the attempt's failure if a subtask failed."""
        ctx = self._ctx
        while True:
            with ctx.changed:
                ctx.changed.wait_for(
                    lambda: ctx.failure is not None or ctx.stopping.is_set(), RESTORE_POLL
                )
            if ctx.failure is not None:
                raise ctx.failure
            if ctx.stopping.is_set() or all(s.restored.is_set() for s in subtasks):
                return

    @property
    def all_left(self) -> bool:
        with self._ctx.changed:
            return self._left == 0

    def _run(self, subtask: subtask_mod.Subtask) -> None:
        try:
            subtask.run()
        finally:
            with self._ctx.changed:
                self._left -= 1
                self._ctx.changed.notify_all()
