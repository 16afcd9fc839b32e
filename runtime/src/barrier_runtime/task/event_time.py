"""Event time inside a subtask: the source side's watermarks and the stored watermark state.

A source step with ``timestamps=`` and ``watermarks=`` gets a
:class:`SourceEventTime`: it reads each batch's event times, feeds the
partition's generator and says what to emit after the batch
(:mod:`~barrier_runtime.task.source_watermarks` holds the logic). A task with
inputs combines its channels in the input gate's
:class:`~barrier_runtime.alignment.watermark_valve.WatermarkValve`.

Both keep their state in *operator* state handles (one JSON object per
subtask, :data:`~barrier_runtime.core.metadata.HandleKind.OPERATOR`): the
source's generator state per partition, the valve's output and channels. On
restore a subtask reads every such handle of its step, so a restore at another
parallelism sees all of them: the source takes its partitions' entries, the
valve the smallest output.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from typing import Any

from barrier_runtime import task_failure
from barrier_runtime.alignment import watermark_valve
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import event_time, steps
from barrier_runtime.core import metadata, types
from barrier_runtime.task import operators, source_watermarks

WATERMARK_STATE = "watermarks"
"""The file name stem of a subtask's watermark state: ``{step}/{subtask}.watermarks.json``."""


class SourceEventTime:
    """The watermarks of one source subtask of ``step`` (which has ``watermarks=``)."""

    def __init__(
        self,
        step: steps.SourceStep,
        partitions: list[str],
        restored: Iterable[bytes],
        *,
        now: float,
    ) -> None:
        assert step.watermarks is not None and step.timestamps is not None
        self.step_id = step.step_id
        self._timestamps = step.timestamps
        merged: dict[str, Any] = {}
        for blob in restored:
            merged.update(_decode(blob, step.step_id))
        self._watermarks = source_watermarks.SourceWatermarks(
            step.watermarks, partitions, now=now, restored=merged
        )

    @property
    def current(self) -> int:
        return self._watermarks.current

    def observe(self, partition: str, batch: batch_mod.Batch, *, now: float) -> None:
        """A batch of ``partition`` is about to be emitted: take its event times."""
        try:
            times = event_time.timestamps_of(batch, self._timestamps)
        except event_time.EventTimeError as exc:
            raise task_failure.UserFunctionError(self.step_id, exc.record, exc) from exc
        self._watermarks.observe(partition, times, now=now)

    def finished(self, partitions: Iterable[str]) -> None:
        for name in partitions:
            self._watermarks.finished(name)

    def poll(self, *, now: float, waiting: Collection[str] = ()) -> watermark_valve.Output:
        """What to emit now; ``waiting``: the partitions not started yet."""
        return self._watermarks.poll(now=now, waiting=waiting)

    def snapshot(self, builder: operators.SnapshotBuilder) -> None:
        builder.blobs.append(state_blob(self.step_id, builder.subtask, self._watermarks.snapshot()))


def state_blob(step_id: types.StepId, subtask: int, state: Any) -> operators.StateBlob:
    """The operator-state blob holding a subtask's watermark ``state`` (JSON)."""
    return operators.StateBlob(
        relpath=f"{step_id}/{subtask}.{WATERMARK_STATE}.json",
        payload=json.dumps(state, separators=(",", ":")).encode(),
        step_id=step_id,
        kind=metadata.HandleKind.OPERATOR,
    )


def handles_of(
    meta: metadata.CheckpointMetadata | None, step_id: types.StepId
) -> list[metadata.StateHandle]:
    """The watermark-state handles of ``step_id`` in a restore point (every subtask's)."""
    if meta is None:
        return []
    return [
        h
        for h in meta.state_handles
        if h.step_id == step_id and h.kind is metadata.HandleKind.OPERATOR
    ]


def restore_valve(
    valve: watermark_valve.WatermarkValve, blobs: Iterable[bytes], step_id: types.StepId
) -> None:
    """Restore a gate's valve from every old subtask's state of its head step."""
    valve.restore([_decode(b, step_id) for b in blobs])


def _decode(blob: bytes, step_id: types.StepId) -> Any:
    try:
        return json.loads(blob)
    except ValueError as exc:
        raise task_failure.PermanentFailure(
            f"the watermark state of step {step_id!r} in the checkpoint is not JSON: {exc}"
        ) from exc
