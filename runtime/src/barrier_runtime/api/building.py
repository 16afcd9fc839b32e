"""What the dataflow-building modules share, below all of them: the error they raise and
what a stream sees of its dataflow.

:class:`~barrier_runtime.api.dataflow.Dataflow` owns the steps; the streams
(:mod:`~barrier_runtime.api.streams`), the event-time steps
(:mod:`~barrier_runtime.api.keyed_time`) and :mod:`~barrier_runtime.api.window_fields`
add steps to it through :class:`StepGraph`, so that none of them imports the modules
above it (not even for annotations): ``dataflow -> streams -> keyed_time ->
window_fields -> building`` has no way back.
"""

from __future__ import annotations

from typing import Protocol

from barrier_runtime.api import steps as defs
from barrier_runtime.core import types


class InvalidDataflowError(ValueError):
    """The dataflow cannot run as built; the message says which step and why."""


class StepGraph(Protocol):
    """What a stream needs of its dataflow (:class:`~barrier_runtime.api.dataflow.Dataflow`)."""

    @property
    def name(self) -> str: ...

    @property
    def steps(self) -> tuple[defs.Step, ...]: ...

    def step(self, step_id: str) -> defs.Step:
        """The step named ``step_id``."""

    def _new_id(self, step_id: str) -> types.StepId:
        """``step_id`` checked: a valid, unused step id."""

    def _add(self, step: defs.Step) -> types.StepId:
        """Add ``step``; its id."""

    def _consume(
        self,
        stream: object,
        by: str,
        partitioning: defs.Partitioning = defs.Partitioning.FORWARD,
        key_fn: defs.KeyFn | None = None,
        key_column: str | None = None,
    ) -> defs.Input:
        """``stream`` (a stream of this dataflow) as an input of step ``by``."""
