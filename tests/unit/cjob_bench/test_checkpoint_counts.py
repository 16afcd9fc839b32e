"""Benchmarks count a long run's periodic checkpoints from the counters, not the bounded history."""

from __future__ import annotations

from cjob_bench.harness import checkpoint_counts

from barrier_runtime.checkpoint import stats
from barrier_runtime.core import types


def _completed(checkpoint_id: int) -> stats.CheckpointStatsEntry:
    return stats.CheckpointStatsEntry(
        checkpoint_id=types.CheckpointId(checkpoint_id),
        status=stats.CheckpointStatus.COMPLETED,
        kind=types.CheckpointKind.CHECKPOINT,
        trigger_time=float(checkpoint_id),
        num_tasks=2,
        ack_times={},
        state_size=0,
        alignment_duration=0.0,
        end_time=checkpoint_id + 0.1,
    )


def test_a_run_with_more_checkpoints_than_the_history_holds_counts_them_all() -> None:
    # 70 periodic checkpoints and the final one (71); the history kept the latest 20.
    snapshot = stats.CheckpointStats(
        counts=stats.CheckpointCounts(triggered=71, completed=71),
        history=tuple(_completed(i) for i in range(71, 51, -1)),
    )
    periodic, held = checkpoint_counts.periodic(snapshot, final_checkpoint=71)
    assert periodic == 70
    assert [e.checkpoint_id for e in held] == list(range(70, 51, -1))  # without the final one


def test_without_a_final_checkpoint_every_completed_one_is_periodic() -> None:
    snapshot = stats.CheckpointStats(
        counts=stats.CheckpointCounts(triggered=3, completed=3),
        history=tuple(_completed(i) for i in (3, 2, 1)),
    )
    assert checkpoint_counts.periodic(snapshot, final_checkpoint=None)[0] == 3
