"""Random interleavings of records, barriers, cancellations and end of input on 2-5 channels.

A model of upstream channels (FIFOs of records with channel-local sequence
numbers, barriers with increasing ids, cancellations, end of partition) feeds
the real :class:`~barrier_runtime.task.input_gate.InputGate` — input
selection, blocked and closed channels, the barrier handler and the capture
of in-flight data for unaligned checkpoints. Some upstreams send a barrier
with priority: at the receiving end it overtakes the data received but not yet
taken, which the gate must capture as channel state (``drain_overtaken``). A
model operator sums the records the gate hands out, and a recording
checkpointing part (the gate's ``GateCheckpointing`` port) notes each
snapshot, completed capture and abort. The named predicates below are checked
after every step and, after draining every channel, once more at the end.
"""

from __future__ import annotations

import collections
import itertools

import pytest
from barrier_runtime_testing.gate_model import Snapshot, TaskModel, Upstream
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from barrier_runtime import alignment
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.channels import messages
from barrier_runtime.core import clock, types
from barrier_runtime.task import input_gate

Result = alignment.BarrierResult

MODES = ["aligned", "unaligned", "alternating", "tracking"]
CONFIGS = {
    "aligned": types.CheckpointConfig(),
    "unaligned": types.CheckpointConfig(unaligned=True),
    "alternating": types.CheckpointConfig(unaligned=True, aligned_timeout=5.0),
    "tracking": types.CheckpointConfig(mode=types.CheckpointingMode.AT_LEAST_ONCE),
}


# -- named predicates ----------------------------------------------------------------------


def snapshot_ids(task: TaskModel) -> list[int]:
    return [snapshot.barrier.checkpoint_id for snapshot in task.snapshots]


def completed_ids(task: TaskModel) -> list[int]:
    aligned = [s.barrier.checkpoint_id for s in task.snapshots if not s.barrier.unaligned]
    return aligned + task.channel_state_done


def each_checkpoint_triggers_at_most_once(task: TaskModel) -> bool:
    return len(snapshot_ids(task)) == len(set(snapshot_ids(task)))


def triggered_ids_increase(task: TaskModel) -> bool:
    ids = snapshot_ids(task)
    return all(a < b for a, b in itertools.pairwise(ids))


def aborts_fire_at_most_once(task: TaskModel) -> bool:
    return len(task.aborted) == len(set(task.aborted))


def triggered_and_aborted_are_disjoint(task: TaskModel) -> bool:
    """An aligned snapshot is final; only an unaligned one may still be aborted (like Flink)."""
    aligned = {s.barrier.checkpoint_id for s in task.snapshots if not s.barrier.unaligned}
    return not aligned & set(task.aborted)


def completed_and_aborted_are_disjoint(task: TaskModel) -> bool:
    return not set(completed_ids(task)) & set(task.aborted)


def channel_state_completes_only_unaligned_snapshots(task: TaskModel) -> bool:
    unaligned = [s.barrier.checkpoint_id for s in task.snapshots if s.barrier.unaligned]
    done = task.channel_state_done
    return len(done) == len(set(done)) and set(done) <= set(unaligned)


def new_barrier_was_not_ignored(gate: input_gate.InputGate, cid: int) -> bool:
    """A barrier above every id read so far starts its checkpoint (it is not obsolete)."""
    return gate.handler.latest_checkpoint_id == cid


def tracking_never_blocks(task: TaskModel) -> bool:
    return not task.ever_blocked


def aligned_no_post_barrier_record_before_snapshot(snap: Snapshot, ups: list[Upstream]) -> bool:
    cid = snap.barrier.checkpoint_id
    return all(
        (before := up.records_before(cid)) is not None and snap.read[ch] <= before
        for ch, up in enumerate(ups)
    )


def aligned_snapshot_includes_every_pre_barrier_record(snap: Snapshot, ups: list[Upstream]):
    cid = snap.barrier.checkpoint_id
    return all(
        (before := up.records_before(cid)) is not None and snap.read[ch] >= before
        for ch, up in enumerate(ups)
    )


def unaligned_restore_equals_aligned(snap: Snapshot, captured: list, ups: list[Upstream]) -> bool:
    """Operator state + channel state == the state of an aligned snapshot, record by record."""
    cid = snap.barrier.checkpoint_id
    aligned_total = 0
    for ch, up in enumerate(ups):
        before = up.records_before(cid)
        if before is None:
            return False
        seqs = [seq for channel, seq, _ in captured if channel == ch]
        if seqs != list(range(snap.read[ch], before)):
            return False
        aligned_total += sum(up.values[:before])
    return snap.total + sum(value for _, _, value in captured) == aligned_total


def tracking_drops_no_record(snap: Snapshot, ups: list[Upstream]) -> bool:
    """Restoring from the snapshot replays after each barrier: nothing before it may be missing.

    A channel that passed the id over (None) never acks it upstream: no restore uses it.
    """
    cid = snap.barrier.checkpoint_id
    return all(
        (before := up.records_before(cid)) is None or snap.read[ch] >= before
        for ch, up in enumerate(ups)
    )


def savepoints_are_aligned(task: TaskModel) -> bool:
    return not any(s.barrier.is_savepoint and s.barrier.unaligned for s in task.snapshots)


def every_seen_checkpoint_ends_exactly_once(seen: set[int], task: TaskModel) -> bool:
    """Seen: the task read a barrier or CANCEL of it while it was the newest id read so far."""
    ends = collections.Counter(completed_ids(task) + task.aborted)
    return set(ends) <= seen and all(ends[cid] == 1 for cid in seen)


def no_record_is_left_unprocessed(task: TaskModel, ups: list[Upstream]) -> bool:
    return all(task.read[ch] == len(up.values) for ch, up in enumerate(ups))


def gate_and_handler_agree_on_blocked(gate: input_gate.InputGate) -> bool:
    return all(gate.handler.is_blocked(c) == (c in gate.blocked) for c in range(gate.num_channels))


def closed_channels_are_never_blocked(gate: input_gate.InputGate) -> bool:
    return not gate.blocked & gate.closed


def gate_captures_exactly_while_the_handler_does(gate: input_gate.InputGate) -> bool:
    """One capture, for the checkpoint the handler collects unaligned — or none."""
    capturing = gate.handler.state.capturing_checkpoint
    return gate.capturing == (frozenset() if capturing is None else frozenset({capturing}))


# -- the simulation ------------------------------------------------------------------------


class Simulation:
    def __init__(self, mode: str, num_channels: int) -> None:
        self.mode = mode
        self.clock = clock.ManualClock(1000.0)
        self.task = TaskModel(num_channels)
        self.ups = [Upstream() for _ in range(num_channels)]
        self.gate = input_gate.InputGate(
            [up.end for up in self.ups], range(num_channels), CONFIGS[mode], self.clock, self.task
        )
        self.triggered: list[types.Barrier] = []
        self.seen: set[int] = set()

    # upstream and coordinator
    def trigger(self, savepoint: bool, fates: list[str]) -> None:
        """The coordinator starts a checkpoint; each channel's upstream reacts per its fate."""
        kind = types.CheckpointKind.SAVEPOINT if savepoint else types.CheckpointKind.CHECKPOINT
        cid = types.CheckpointId(len(self.triggered) + 1)
        barrier = types.Barrier(cid, self.clock.now(), kind)
        self.triggered.append(barrier)
        for ch, up in enumerate(self.ups):
            fate = fates[ch % len(fates)]
            if up.ended:
                continue
            if fate == "skip":  # the upstream never got this checkpoint
                continue
            if fate == "cancel":  # the upstream aborted it before forwarding the barrier
                up.end.put(messages.CancelMarker(cid))
                up.cancelled.add(cid)
                continue
            up.barrier_at[cid] = len(up.values)
            up.last_barrier = cid
            if fate in ("unaligned", "priority") and self.mode != "tracking" and not savepoint:
                if fate == "priority":  # overtakes the data not yet taken at this end
                    up.end.put_priority(barrier.as_unaligned())
                else:  # this upstream switched to unaligned
                    up.end.put(barrier.as_unaligned())
            else:
                up.end.put(barrier)

    def emit_records(self, ch: int, values: list[int]) -> None:
        up = self.ups[ch % len(self.ups)]
        for value in values if not up.ended else []:
            up.end.put(batch_mod.Batch.from_rows([{"seq": len(up.values), "value": value}]))
            up.values.append(value)

    def cancel_last(self, ch: int) -> None:
        """An upstream aborts a checkpoint after forwarding its barrier (unaligned upstream)."""
        up = self.ups[ch % len(self.ups)]
        if up.last_barrier is not None and not up.ended:
            up.end.put(messages.CancelMarker(types.CheckpointId(up.last_barrier)))
            up.cancelled.add(up.last_barrier)
            up.last_barrier = None

    def end(self, ch: int) -> None:
        up = self.ups[ch % len(self.ups)]
        if not up.ended:
            up.end.put(messages.END_OF_PARTITION)
            up.ended = True

    # the task
    def tick(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.gate.check_timeouts()

    def read(self, ch: int) -> None:
        ch %= len(self.ups)
        head = self.ups[ch].end.peek()
        cid = head.checkpoint_id if isinstance(head, types.Barrier | messages.CancelMarker) else 0
        is_new = cid > max(self.seen, default=0)
        ended = cid in completed_ids(self.task) or cid in self.task.aborted
        outcomes_before = self._outcomes()
        polled = self.gate.take_from(ch)
        if isinstance(polled, input_gate.DataBatch):
            self.task.process(polled)
        elif isinstance(head, types.Barrier) and polled is not input_gate.Polled.NOTHING:
            self._saw(cid)
            assert not is_new or new_barrier_was_not_ignored(self.gate, cid)
            assert not ended or self._outcomes() == outcomes_before, "obsolete barrier acted"
        elif isinstance(head, messages.CancelMarker) and polled is not input_gate.Polled.NOTHING:
            self._saw(cid)
        self.task.ever_blocked |= bool(self.gate.blocked)

    def _outcomes(self) -> tuple[int, int, int, frozenset[int]]:
        task = self.task
        return (
            len(task.snapshots),
            len(task.aborted),
            len(task.channel_state_done),
            self.gate.blocked,
        )

    def _saw(self, cid: int) -> None:
        if cid > max(self.seen, default=0):
            self.seen.add(cid)

    def drain(self, order: list[int]) -> None:
        """End every channel and read everything, choosing among readable channels by ``order``."""
        for ch in range(len(self.ups)):
            self.end(ch)
        step = 0
        while any(len(up.end) for up in self.ups):
            readable = [c for c, up in enumerate(self.ups) if len(up.end) and self.gate.readable(c)]
            assert readable, f"deadlock: every channel with input is blocked {self.gate.blocked}"
            self.read(readable[order[step % len(order)] % len(readable)])
            step += 1

    # checks
    def check(self) -> None:
        task, ups, gate = self.task, self.ups, self.gate
        assert each_checkpoint_triggers_at_most_once(task), snapshot_ids(task)
        assert triggered_ids_increase(task), snapshot_ids(task)
        assert aborts_fire_at_most_once(task), task.aborted
        assert triggered_and_aborted_are_disjoint(task), (task.snapshots, task.aborted)
        assert completed_and_aborted_are_disjoint(task), (completed_ids(task), task.aborted)
        assert channel_state_completes_only_unaligned_snapshots(task), task.channel_state_done
        assert savepoints_are_aligned(task), task.snapshots
        assert gate_and_handler_agree_on_blocked(gate), gate.blocked
        assert closed_channels_are_never_blocked(gate), (gate.blocked, gate.closed)
        assert gate_captures_exactly_while_the_handler_does(gate), gate.capturing
        if self.mode == "tracking":
            assert tracking_never_blocks(task)
            for snap in task.snapshots:
                assert tracking_drops_no_record(snap, ups), (snap, ups)
            return
        for snap in task.snapshots:
            cid = snap.barrier.checkpoint_id
            if not snap.barrier.unaligned:
                assert aligned_no_post_barrier_record_before_snapshot(snap, ups), (snap, ups)
                assert aligned_snapshot_includes_every_pre_barrier_record(snap, ups), (snap, ups)
                assert not task.captured.get(cid), task.captured[cid]
            elif cid in task.channel_state_done:
                assert unaligned_restore_equals_aligned(snap, task.captured[cid], ups), (
                    snap,
                    task.captured[cid],
                    ups,
                )

    def check_final(self) -> None:
        self.check()
        assert self.gate.handler.pending_checkpoint is None
        assert self.gate.handler.open_channels == 0
        assert not self.gate.blocked
        assert not self.gate.capturing
        assert every_seen_checkpoint_ends_exactly_once(self.seen, self.task), (
            self.seen,
            completed_ids(self.task),
            self.task.aborted,
        )
        assert no_record_is_left_unprocessed(self.task, self.ups)


# -- random interleavings, then drain ------------------------------------------------------

CHANNEL = st.integers(0, 4)
SAVEPOINT = st.sampled_from([False, False, False, True])
FATES = st.lists(
    st.sampled_from(["barrier"] * 7 + ["unaligned", "priority", "priority", "cancel", "skip"]),
    min_size=5,
    max_size=5,
)
RECORDS = st.lists(st.integers(-50, 50), min_size=1, max_size=6)
DRAIN_ORDER = st.lists(st.integers(0, 4), min_size=1, max_size=8)
TICK = st.sampled_from([0.5, 2.0, 6.0])
ACTIONS = st.one_of(
    st.tuples(st.just("trigger"), SAVEPOINT, FATES),
    st.tuples(st.just("emit_records"), CHANNEL, RECORDS),
    st.tuples(st.just("cancel_last"), CHANNEL),
    st.tuples(st.just("end"), CHANNEL),
    *[st.tuples(st.just("read"), CHANNEL)] * 4,
    st.tuples(st.just("tick"), TICK),
)


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    num_channels=st.integers(2, 5),
    actions=st.lists(ACTIONS, min_size=10, max_size=150),
    drain_order=DRAIN_ORDER,
)
@example(  # a channel that never got checkpoint 1 ends: it counts as aligned
    num_channels=2, actions=[("trigger", False, ["barrier", "skip"] * 3)], drain_order=[0]
)
@example(  # the post-barrier record on channel 1 must wait for channel 2's barrier
    num_channels=3,
    actions=[
        ("emit_records", 2, [5]),
        ("trigger", False, ["barrier"] * 5),
        ("emit_records", 1, [7]),
    ],
    drain_order=[0],
)
def test_random_interleavings_keep_every_invariant(mode, num_channels, actions, drain_order):
    sim = Simulation(mode, num_channels)
    for name, *args in actions:
        getattr(sim, name)(*args)
        sim.check()
    sim.drain(drain_order)
    sim.check_final()
    coverage_events(sim)


def coverage_events(sim: Simulation) -> None:
    """Label examples so ``--hypothesis-show-statistics`` shows what the runs reached."""
    task = sim.task
    aligned = len(completed_ids(task)) - len(task.channel_state_done)
    event(f"{sim.mode}: aligned snapshots {min(aligned, 3)}")
    event(f"{sim.mode}: unaligned completed {min(len(task.channel_state_done), 3)}")
    event(f"{sim.mode}: aborts {min(len(task.aborted), 3)}")
    event(f"{sim.mode}: captured records {min(sum(map(len, task.captured.values())), 3)}")
