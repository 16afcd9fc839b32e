"""The sink operator: writes to a two-phase-commit sink writer, pre-commits at each
snapshot and commits when the checkpoint completes."""

from __future__ import annotations

from typing import Any

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import sinks, steps
from barrier_runtime.core import types
from barrier_runtime.task import latency
from barrier_runtime.task.operators import base, registry


class SinkOperator(base.Operator):
    """Writes to a two-phase-commit sink writer; commits on checkpoint completion."""

    def __init__(
        self,
        step: steps.SinkStep,
        writer: sinks.SinkWriter,
        on_commit: base.CommitHook,
    ) -> None:
        super().__init__(step.step_id, _no_emit)
        self.sink = step.sink
        self.writer = writer
        self._on_commit = on_commit
        self.pending: list[tuple[types.CheckpointId, Any]] = []
        self.latency = latency.SinkLatency()
        self.written = 0
        """Records written in this attempt; those before a barrier are published with it."""

    def process(self, batch: batch_mod.Batch, side: int) -> None:
        self.written += len(batch)
        if batch.arrow_is_exact:  # rows converted to Arrow are written as the rows they are
            self.writer.write_batch(batch.to_arrow())
        else:
            self.writer.write(batch.rows())
        created = latency.created_times(batch)
        if created is not None:
            self.latency.observe(created)

    def snapshot(self, builder: base.SnapshotBuilder) -> None:
        self.latency.epoch_ended(builder.checkpoint_id)
        txn = self.writer.pre_commit(builder.checkpoint_id)
        if txn is not None:
            self.pending.append((builder.checkpoint_id, txn))
        # Every transaction not yet committed travels with this checkpoint, so that
        # data of an aborted earlier checkpoint is published with this one.
        builder.sink_transactions[self.step_id] = tuple(t for _, t in self.pending)
        builder.sink_records[self.step_id] = self.written

    def checkpoint_completed(self, checkpoint_id: types.CheckpointId) -> None:
        due = [(cid, t) for cid, t in self.pending if cid <= checkpoint_id]
        for cid, txn in due:
            self._on_commit(cid)
            self.sink.commit(txn)
            self.pending.remove((cid, txn))
        self.latency.committed(checkpoint_id)

    def close(self) -> None:
        self.writer.close()


@registry.register(steps.SinkStep)
def _sink(step: steps.SinkStep, ctx: registry.OperatorContext) -> base.Operator:
    writer = step.sink.writer(step.step_id, ctx.subtask, ctx.parallelism)
    return SinkOperator(step, writer, ctx.on_commit)


def _no_emit(batch: batch_mod.Batch) -> None:
    raise RuntimeError("a sink has no output")
