"""Records a step or a source rejected (``on_error``): skipped and counted, or dead letters.

Each step whose ``on_error`` is ``"skip"`` or ``"dead-letter"`` gets one
:class:`Rejects` per subtask. ``skip`` counts (and, for steps, logs) every
rejected record. ``dead-letter`` also writes one row per record to the
dataflow's dead-letter sink through a :class:`~.operators.sink.SinkOperator` of its
own, registered among the subtask's operators under
:func:`~barrier_runtime.api.dataflow.dead_letter_step` (``_dead-letters.<step>``,
a name no user step can take). That operator pre-commits at every snapshot and commits when the
checkpoint completes, like any sink; a restore re-commits its transactions.
So a dead letter is published exactly once, together with the checkpoint
whose source positions lie past its record.

A dead-letter row: ``step``, ``subtask``, ``error`` (``Type: message``, or a
source's problem), ``position`` (a source's file and line; ``None`` for a step)
and ``record`` (the record as JSON, or a source's raw text).
"""

from __future__ import annotations

import json
import logging

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import dataflow, sinks, sources, steps
from barrier_runtime.core import types
from barrier_runtime.task import operators

log = logging.getLogger(__name__)

LOGGED_PER_STEP = 10
"""Skipped records logged one by one per step and subtask; after that, every 1000th."""


class Rejects:
    """One step's rejected records on one subtask."""

    def __init__(
        self,
        step_id: types.StepId,
        subtask: int,
        dead_letters: operators.sink.SinkOperator | None,
    ) -> None:
        self.step_id = step_id
        self.subtask = subtask
        self.dead_letters = dead_letters
        self.count = 0

    def reject_record(self, record: object, error: BaseException) -> None:
        """The step's function raised ``error`` on ``record``."""
        text = f"{type(error).__name__}: {' '.join(str(error).split())}".rstrip(": ")
        self._reject(text, None, _as_json(record))

    def reject_read(self, rejected: sources.Rejected) -> None:
        """The source could not read a record (it logged it already)."""
        self._reject(rejected.error, rejected.position, rejected.raw, logged=True)

    def _reject(
        self, error: str, position: str | None, record: str | None, logged: bool = False
    ) -> None:
        self.count += 1
        if self.dead_letters is not None:
            row = {
                "step": self.step_id,
                "subtask": self.subtask,
                "error": error,
                "position": position,
                "record": record,
            }
            self.dead_letters.process(batch_mod.Batch.from_rows([row]), 0)
        elif not logged and (self.count <= LOGGED_PER_STEP or self.count % 1000 == 0):
            log.warning(
                "step %r skipped a record (%d so far on subtask %d): %s on %s",
                self.step_id,
                self.count,
                self.subtask,
                error,
                record,
            )


def for_step(
    step: steps.Step,
    dead_letter_sink: sinks.Sink | None,
    subtask: int,
    parallelism: int,
    on_commit: operators.CommitHook,
) -> tuple[Rejects | None, operators.sink.SinkOperator | None]:
    """The :class:`Rejects` of ``step`` (``None`` under ``fail``) and its dead-letter
    operator (``None`` unless ``dead-letter``), to register among the subtask's operators."""
    policy = dataflow.error_policy(step)
    if policy == "fail":
        return None, None
    writer_op = None
    if policy == "dead-letter":
        if dead_letter_sink is None:
            raise ValueError(f"step {step.step_id!r} has no dead-letter sink")
        name = dataflow.dead_letter_step(step.step_id)
        sink_step = steps.SinkStep(
            name, steps.Input(step.step_id, steps.Partitioning.FORWARD), dead_letter_sink
        )
        writer = dead_letter_sink.writer(name, subtask, parallelism)
        writer_op = operators.sink.SinkOperator(sink_step, writer, on_commit)
    return Rejects(step.step_id, subtask, writer_op), writer_op


def _as_json(record: object) -> str:
    try:
        return json.dumps(record, default=repr, ensure_ascii=False)
    except (TypeError, ValueError):  # e.g. keys that are not strings
        return repr(record)
