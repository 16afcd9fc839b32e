"""Periodic checkpoints of a finished benchmark job, counted right.

The job's checkpoint history keeps only the latest checkpoints (as Flink's
does), so a run with more of them must count from the counters.
"""

from __future__ import annotations

from barrier_runtime.checkpoint import stats as stats_mod


def periodic(
    stats: stats_mod.CheckpointStats, final_checkpoint: int | None
) -> tuple[int, list[stats_mod.CheckpointStatsEntry]]:
    """How many periodic checkpoints completed, and those of them the history still holds."""
    completed = [
        e
        for e in stats.history
        if e.status is stats_mod.CheckpointStatus.COMPLETED and e.checkpoint_id != final_checkpoint
    ]
    return stats.counts.completed - (final_checkpoint is not None), completed
