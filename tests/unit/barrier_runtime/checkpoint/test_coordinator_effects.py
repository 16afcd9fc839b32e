"""Effects: notifications decided under the lock and run after it."""

from __future__ import annotations

from barrier_runtime_testing import checkpoint as testing

from barrier_runtime.checkpoint import effects
from barrier_runtime.core import metadata, types

ID = types.CheckpointId
R = types.FailureReason


class FlakyGateway(testing.RecordingGateway):
    """Fails to notify the abort of checkpoint 1, records the rest."""

    def notify_aborted(
        self, checkpoint_id: types.CheckpointId, reason: types.FailureReason
    ) -> None:
        if checkpoint_id == 1:
            raise ConnectionError("task manager unreachable")
        super().notify_aborted(checkpoint_id, reason)


def test_runs_aborts_then_failover_and_survives_failures() -> None:
    gateway = FlakyGateway()
    failovers: list[str] = []
    pending = effects.Effects(aborted=[(ID(1), R.TIMEOUT), (ID(2), R.SUBSUMED)], failover="why")
    pending.run(gateway, failovers.append)
    assert gateway.aborted == [(ID(2), R.SUBSUMED)]
    assert failovers == ["why"]


def test_running_twice_notifies_once() -> None:
    gateway = testing.RecordingGateway()
    failovers: list[str] = []
    pending = effects.Effects(aborted=[(ID(3), R.DECLINED)], failover="why")
    pending.run(gateway, failovers.append)
    pending.run(gateway, failovers.append)
    assert gateway.aborted == [(ID(3), R.DECLINED)]
    assert failovers == ["why"]


def test_failing_complete_notification_is_swallowed() -> None:
    class Broken(testing.RecordingGateway):
        def notify_complete(self, metadata: metadata.CheckpointMetadata) -> None:
            raise ConnectionError("down")

    fingerprint = metadata.JobFingerprint((), 1, 1)
    document = metadata.CheckpointMetadata(
        ID(1), types.CheckpointKind.CHECKPOINT, 0, 1, fingerprint
    )
    effects.Effects.run_notify_complete(Broken(), document)  # must not raise
