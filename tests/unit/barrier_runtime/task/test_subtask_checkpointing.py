"""SubtaskCheckpointing: one owner per snapshot, acknowledged once, after its last upload.

The attempt's services are a recorder that queues uploads until the test runs
them (as the upload pool would, later); the chain and the output record too.
"""

from __future__ import annotations

from collections.abc import Callable

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.channels import messages
from barrier_runtime.core import faults, metadata, types
from barrier_runtime.task import operators, snapshots, subtask_checkpointing

KEY = metadata.TaskKey(types.TaskId("t"), 0)


def barrier(cid: int, *, unaligned: bool = False) -> types.Barrier:
    b = types.Barrier(types.CheckpointId(cid), 0.0)
    return b.as_unaligned() if unaligned else b


class Services:
    """Records acks, declines and store writes; uploads wait in ``queued`` until run."""

    def __init__(self) -> None:
        self.attempt = 0
        self.faults = faults.FaultInjector()
        self.config = types.CheckpointConfig()
        self.acks: list[metadata.TaskAcknowledgement] = []
        self.declines: list[tuple[types.CheckpointId, types.FailureReason]] = []
        self.queued: list[Callable[[], None]] = []
        self.channel_state: dict[types.CheckpointId, list[snapshots.InFlight]] = {}

    def acknowledge(self, ack: metadata.TaskAcknowledgement) -> None:
        self.acks.append(ack)

    def decline(
        self, checkpoint_id: types.CheckpointId, task: metadata.TaskKey, reason: types.FailureReason
    ) -> None:
        self.declines.append((checkpoint_id, reason))

    def submit_upload(
        self, task: metadata.TaskKey, checkpoint_id: types.CheckpointId, upload: Callable[[], None]
    ) -> None:
        self.queued.append(upload)

    def run_uploads(self) -> None:
        queued, self.queued = self.queued, []
        for upload in queued:
            upload()

    def write_blob(
        self, barrier: types.Barrier, task: metadata.TaskKey, blob: operators.StateBlob
    ) -> metadata.StateHandle:
        return metadata.StateHandle(blob.step_id, task.subtask, blob.relpath, len(blob.data), "")

    def write_channel_state(
        self, barrier: types.Barrier, task: metadata.TaskKey, entries: list[snapshots.InFlight]
    ) -> metadata.StateHandle:
        self.channel_state[barrier.checkpoint_id] = entries
        return metadata.StateHandle(
            types.StepId("t"), task.subtask, "cs", 7, "", metadata.HandleKind.CHANNEL
        )


class Chain:
    def snapshot_into(self, builder: operators.SnapshotBuilder) -> None:
        builder.blobs.append(
            operators.StateBlob("s", b"abc", types.StepId("s"), metadata.HandleKind.KEYED)
        )


class Output:
    def __init__(self, overtaken: list[snapshots.InFlight] | None = None) -> None:
        self.sent: list[object] = []
        self._overtaken = overtaken or []

    def broadcast(self, item: messages.CancelMarker | types.Barrier) -> None:
        self.sent.append(item)

    def forward_priority(self, barrier: types.Barrier) -> list[snapshots.InFlight]:
        self.sent.append(("priority", barrier.checkpoint_id))
        return self._overtaken


def make(
    output: Output | None = None,
) -> tuple[subtask_checkpointing.SubtaskCheckpointing, Services, Output]:
    services, out = Services(), output or Output()
    return subtask_checkpointing.SubtaskCheckpointing(KEY, services, Chain(), out), services, out


def test_aligned_snapshot_forwards_first_and_acks_after_the_upload() -> None:
    cp, services, out = make()
    cp.snapshot(barrier(1), 0.5, channel_state=False)
    assert out.sent == [barrier(1)]
    assert services.acks == []
    services.run_uploads()
    [ack] = services.acks
    assert ack.checkpoint_id == 1 and ack.metrics.state_size == 3
    assert ack.metrics.alignment_duration == 0.5


def test_unaligned_ack_waits_for_the_captured_channel_state() -> None:
    overtaken = [snapshots.InFlight.of(types.TaskId("d"), 0, 1, "output", -1, ({"v": 2},))]
    cp, services, out = make(Output(overtaken))
    cp.snapshot(barrier(2, unaligned=True), 0.0, channel_state=True)
    assert out.sent == [("priority", 2)]
    services.run_uploads()
    assert services.acks == []  # the gate is still capturing
    rows = batch_mod.Batch.from_rows([{"v": 1}])
    cp.channel_state_complete(types.CheckpointId(2), [(1, 0, rows)])
    services.run_uploads()
    [ack] = services.acks
    assert ack.metrics.channel_state_size == 7
    assert services.channel_state[types.CheckpointId(2)] == [
        snapshots.InFlight(KEY.task_id, 1, 0, "input", rows, source_subtask=0),
        *overtaken,
    ]


def test_a_dropped_capture_never_acknowledges() -> None:
    cp, services, _ = make()
    cp.snapshot(barrier(3, unaligned=True), 0.0, channel_state=True)
    cp.dropped(types.CheckpointId(4), and_older=True)
    cp.channel_state_complete(types.CheckpointId(3), [])
    services.run_uploads()
    assert services.acks == []


def test_abort_cancels_downstream_and_declines_once() -> None:
    cp, services, out = make()
    cp.abort(types.CheckpointId(5), types.FailureReason.SUBSUMED)
    assert out.sent == [messages.CancelMarker(types.CheckpointId(5))]
    assert services.declines == [(5, types.FailureReason.SUBSUMED)]


def test_a_direct_trigger_snapshots_without_forwarding_when_input_ends() -> None:
    cp, services, out = make()
    cp.triggered(barrier(6), source=False, finished=False)
    assert services.queued == []
    cp.input_finished()
    services.run_uploads()
    assert [a.checkpoint_id for a in services.acks] == [6] and out.sent == []


def test_a_direct_trigger_a_barrier_already_took_care_of_is_not_repeated() -> None:
    cp, services, _ = make()
    cp.triggered(barrier(7), source=False, finished=False)
    cp.snapshot(barrier(7), 0.0, channel_state=False)
    cp.input_finished()
    cp.triggered(barrier(7), source=True, finished=False)
    services.run_uploads()
    assert [a.checkpoint_id for a in services.acks] == [7]


def test_an_unaligned_snapshot_with_nothing_in_flight_writes_no_channel_state_object() -> None:
    cp, services, out = make(Output([]))
    cp.snapshot(barrier(5, unaligned=True), 0.0, channel_state=True)
    assert out.sent == [("priority", 5)]
    services.run_uploads()
    assert services.acks == []  # the gate is still capturing
    cp.channel_state_complete(types.CheckpointId(5), [])
    services.run_uploads()
    [ack] = services.acks
    assert ack.checkpoint_id == 5 and ack.metrics.channel_state_size == 0
    assert services.channel_state == {}  # no empty object was stored
