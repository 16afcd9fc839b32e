"""The channel-state ordering guarantee, proven with the real barrier handler over TCP.

Per input channel and checkpoint n, the records the receiver's snapshot does
not reflect must be, in replay order: (1) records taken after the snapshot and
before the channel's barrier (the handler's capture), (2) the receiver-
overtaken batches (``drain_overtaken``), (3) the sender-overtaken batches
(``put_priority``'s result). This test wires a task exactly as the report
recommends for ``Subtask`` and checks that state + (1) + (2) + (3) is exactly
what each sender emitted before its barrier, in order, with nothing twice.
"""

from __future__ import annotations

import pytest
import waiting
from barrier_runtime_testing import channels as testing

from barrier_runtime import alignment
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.channels import endpoints, network
from barrier_runtime.core import clock, types

pytestmark = pytest.mark.timeout(60)
CHECKPOINT = types.CheckpointId(4)


def seqs(items: list[batch_mod.Batch]) -> list[int]:
    return [r["seq"] for b in items for r in b.rows()]


class GateTask:
    """A receiving task with two remote inputs, wired per the recipe in the report."""

    def __init__(self, inputs: list[endpoints.RemoteInputChannel]) -> None:
        self.inputs = inputs
        self.processed: dict[int, list[int]] = {0: [], 1: []}
        self.state: dict[int, list[int]] | None = None
        self.capture: dict[types.CheckpointId, dict[int, list[int]]] = {}
        self.complete: dict[types.CheckpointId, dict[int, list[int]]] = {}
        self._stash: tuple[types.CheckpointId, int, list[batch_mod.Batch]] | None = None
        config = types.CheckpointConfig(unaligned=True)
        self.handler = alignment.create_barrier_handler(config, 2, self, clock.ManualClock())

    def step(self, ch: int) -> endpoints.Item:
        item = self.inputs[ch].take()
        assert item is not None
        if isinstance(item, batch_mod.Batch):
            capture_for = self.handler.record_received(ch)
            if capture_for in self.capture:
                self.capture[capture_for][ch] += seqs([item])
            self.processed[ch] += seqs([item])
        elif isinstance(item, types.Barrier):
            n = item.checkpoint_id
            overtaken = self.inputs[ch].drain_overtaken(n)
            if n in self.capture:  # snapshot already taken (another channel's barrier came first)
                self.capture[n][ch] += seqs(overtaken)
            else:  # this barrier may start the snapshot: snapshot_state picks the stash up
                self._stash = (n, ch, overtaken)
            self.handler.barrier_received(ch, item)
            self._stash = None
        return item

    # -- BarrierHandlerController -------------------------------------------------------

    def snapshot_state(self, barrier: types.Barrier, alignment_duration: float) -> None:
        self.state = {ch: list(done) for ch, done in self.processed.items()}
        self.capture[barrier.checkpoint_id] = {0: [], 1: []}
        if self._stash is not None and self._stash[0] == barrier.checkpoint_id:
            self.capture[barrier.checkpoint_id][self._stash[1]] += seqs(self._stash[2])

    def channel_state_complete(self, checkpoint_id: types.CheckpointId) -> None:
        self.complete[checkpoint_id] = self.capture.pop(checkpoint_id)

    def block_channel(self, channel: int) -> None:
        raise AssertionError("unaligned checkpoints never block")

    def unblock_all(self) -> None:
        pass

    def abort_checkpoint(
        self, checkpoint_id: types.CheckpointId, reason: types.FailureReason
    ) -> None:
        raise AssertionError(f"checkpoint {checkpoint_id} aborted: {reason}")


def test_channel_state_is_exactly_what_the_snapshot_misses_in_replay_order(
    pair: tuple[network.WorkerNetwork, network.WorkerNetwork],
) -> None:
    a, b = pair
    signal_a, signal_b = testing.TaskSignal(), testing.TaskSignal()
    outs = [a.output_channel(c, 1, signal_a) for c in (1, 2)]
    inputs = [b.input_channel(c, 0, signal_b, capacity=3) for c in (1, 2)]
    emitted: dict[int, list[int]] = {0: [], 1: []}

    def emit(ch: int, count: int) -> None:
        for _ in range(count):
            start = ch * 1000 + len(emitted[ch])
            outs[ch].put(batch_mod.Batch.from_rows([{"seq": start}, {"seq": start + 1}]))
            emitted[ch] += [start, start + 1]

    def settled(ch: int, at_sender: int, at_receiver: int) -> None:
        waiting.wait_until(
            lambda: (
                outs[ch].queued_batches == at_sender and inputs[ch].queued_batches == at_receiver
            ),
            10,
            "outs[ch].queued_batches == at_sender and inputs[ch].queued_batches == at_receiver",
        )

    task = GateTask(inputs)
    barrier = types.Barrier(CHECKPOINT, 0.0, unaligned=True)
    for ch in (0, 1):
        emit(ch, 6)
        settled(ch, 3, 3)
        task.step(ch)  # part of the operator state
        settled(ch, 2, 3)

    # Channel 0's barrier overtakes 2 batches at the sender and 3 at the receiver, and
    # triggers the snapshot.
    before_barrier = {0: list(emitted[0])}
    sender_overtaken = {0: seqs(outs[0].put_priority(barrier))}
    waiting.wait_until(lambda: inputs[0].peek() == barrier, 10, "inputs[0].peek() == barrier")
    assert task.step(0) == barrier and task.state is not None
    # Channel 1 still owes the barrier: what the task takes from it now is captured.
    task.step(1)
    task.step(1)
    settled(1, 0, 3)
    emit(1, 2)
    before_barrier[1] = list(emitted[1])
    sender_overtaken[1] = seqs(outs[1].put_priority(barrier))
    waiting.wait_until(lambda: inputs[1].peek() == barrier, 10, "inputs[1].peek() == barrier")
    assert task.step(1) == barrier

    channel_state = task.complete[CHECKPOINT]
    assert len(sender_overtaken[0]) == 4 and len(sender_overtaken[1]) == 4
    assert len(channel_state[0]) == 6  # receiver-overtaken only
    assert len(channel_state[1]) == 4 + 6  # captured, then receiver-overtaken
    for ch in (0, 1):
        replay = task.state[ch] + channel_state[ch] + sender_overtaken[ch]
        assert replay == before_barrier[ch], f"channel {ch}: state + channel state != emitted"

    # After the barrier the overtaken data is still processed, in order, nothing lost.
    for ch in (0, 1):
        outs[ch].put(batch_mod.Batch.from_rows([{"seq": -1}]))
        while task.processed[ch][-1:] != [-1]:
            if len(inputs[ch]) == 0:
                waiting.wait_until(lambda ch=ch: len(inputs[ch]) > 0, 10, "len(inputs[ch]) > 0")  # type: ignore[misc]
            task.step(ch)
        assert task.processed[ch] == before_barrier[ch] + [-1]
