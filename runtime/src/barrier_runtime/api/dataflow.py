"""Building a dataflow: the user's entry point.

A pipeline module builds a :class:`Dataflow` and wires steps through
:class:`~barrier_runtime.api.streams.Stream` objects. Every step takes a stable
``step_id`` first: it names the step's persisted state, so renaming a step is a
breaking change. The dataflow owns the steps (by id), what consumes what, and
the rules the whole graph must keep (:meth:`Dataflow.validate`, dead letters);
the streams (:mod:`~barrier_runtime.api.streams`) only say what to add.

>>> from barrier_runtime.testing import TestingSink, TestingSource
>>> flow = Dataflow("doubler")
>>> out = TestingSink()
>>> flow.source("numbers", TestingSource([{"n": 1}, {"n": 2}])) \\
...     .map("double", lambda r: {"n": r["n"] * 2}) \\
...     .sink("out", out)
>>> flow.validate()
>>> [s for s in flow.step_ids]
['numbers', 'double', 'out']

A record a step cannot process fails the job by default; ``on_error="skip"``
drops and counts it, ``on_error="dead-letter"`` sends it with its error to the
dataflow's dead-letter sink, exactly once with the checkpoint:

>>> flow = Dataflow("parser", dead_letters=TestingSink())
>>> flow.source("lines", TestingSource([{"n": "1"}, {"n": "x"}])) \\
...     .map("parse", lambda r: {"n": int(r["n"])}, on_error="dead-letter") \\
...     .sink("out", TestingSink())
>>> flow.validate()
"""

from __future__ import annotations

from barrier_runtime.api import building, event_time, sinks, sources, streams
from barrier_runtime.api import steps as defs
from barrier_runtime.api import watermarks as watermarks_mod
from barrier_runtime.core import types

DEFAULT_MAX_PARALLELISM = 128
DEAD_LETTER_PREFIX = "_dead-letters."
"""Dead letters of step s commit under _dead-letters.s (user step ids cannot start with _)."""

InvalidDataflowError = building.InvalidDataflowError
Stream = streams.Stream
KeyedStream = streams.KeyedStream
WindowedStream = streams.WindowedStream
"""The streams live in :mod:`~barrier_runtime.api.streams`; these names stay for callers."""


class Dataflow:
    """A directed acyclic graph of steps, from sources to sinks."""

    def __init__(
        self,
        name: str,
        *,
        max_parallelism: int = DEFAULT_MAX_PARALLELISM,
        dead_letters: sinks.Sink | None = None,
    ) -> None:
        """``dead_letters``: the transactional sink that steps and sources with
        ``on_error="dead-letter"`` send their rejected records to (one record per
        rejection: ``step``, ``subtask``, ``error``, ``position`` and ``record``)."""
        if not name:
            raise InvalidDataflowError("a dataflow needs a non-empty name")
        if not 1 <= max_parallelism <= 32768:
            raise InvalidDataflowError(
                f"max_parallelism must be between 1 and 32768, got {max_parallelism}"
            )
        if dead_letters is not None and not isinstance(dead_letters, sinks.Sink):
            raise InvalidDataflowError(
                f"dead_letters: {type(dead_letters).__name__} is not a barrier_runtime Sink"
            )
        self.name = name
        self.max_parallelism = max_parallelism
        self.dead_letters = dead_letters
        self._steps: dict[types.StepId, defs.Step] = {}
        self._consumed: set[types.StepId] = set()

    @property
    def step_ids(self) -> tuple[types.StepId, ...]:
        return tuple(self._steps)

    @property
    def steps(self) -> tuple[defs.Step, ...]:
        return tuple(self._steps.values())

    def step(self, step_id: str) -> defs.Step:
        return self._steps[types.StepId(step_id)]

    def source(
        self,
        step_id: str,
        source: sources.Source,
        *,
        timestamps: event_time.Timestamps | None = None,
        watermarks: watermarks_mod.WatermarkStrategy | None = None,
    ) -> Stream:
        """Add a source and return its stream.

        For event time, give both ``timestamps`` (a column name or a function of the
        record returning ms since the epoch) and ``watermarks`` (a strategy such as
        ``BoundedOutOfOrderness(5_000)``): each partition then generates
        watermarks from the event times it reads.
        """
        if not isinstance(source, sources.Source):
            raise InvalidDataflowError(
                f"step {step_id!r}: {type(source).__name__} is not a barrier_runtime Source"
            )
        if (timestamps is None) != (watermarks is None):
            given = "timestamps" if watermarks is None else "watermarks"
            raise InvalidDataflowError(
                f"step {step_id!r}: event time needs both timestamps= and watermarks=, "
                f"only {given}= was given"
            )
        if watermarks is not None and not isinstance(watermarks, watermarks_mod.WatermarkStrategy):
            raise InvalidDataflowError(
                f"step {step_id!r}: watermarks= takes a WatermarkStrategy "
                f"(e.g. BoundedOutOfOrderness(5_000)), not {type(watermarks).__name__}"
            )
        if timestamps is not None and not (isinstance(timestamps, str) or callable(timestamps)):
            raise InvalidDataflowError(
                f"step {step_id!r}: timestamps= takes a column name or a function of the "
                f"record, not {type(timestamps).__name__}"
            )
        step = defs.SourceStep(self._new_id(step_id), source, timestamps, watermarks)
        return Stream(self, self._add(step))

    def merge(self, step_id: str, *inputs: Stream) -> Stream:
        """The union of ``inputs`` (records keep their per-input order)."""
        if len(inputs) < 2:
            raise InvalidDataflowError(f"step {step_id!r}: merge needs at least two streams")
        consumed = tuple(self._consume(s, step_id) for s in inputs)
        return Stream(self, self._add(defs.MergeStep(self._new_id(step_id), consumed)))

    def validate(self) -> None:
        """Raise :class:`InvalidDataflowError` unless the flow can run."""
        if not any(isinstance(s, defs.SourceStep) for s in self._steps.values()):
            raise InvalidDataflowError(f"dataflow {self.name!r} has no source")
        if not any(isinstance(s, defs.SinkStep) for s in self._steps.values()):
            raise InvalidDataflowError(
                f"dataflow {self.name!r} has no sink: its results would go nowhere"
            )
        self._validate_error_policies()
        dangling = [
            sid
            for sid, s in self._steps.items()
            if not isinstance(s, defs.SinkStep) and sid not in self._consumed
        ]
        if dangling:
            names = ", ".join(repr(d) for d in dangling)
            raise InvalidDataflowError(
                f"dataflow {self.name!r}: the output of step(s) {names} is never used; "
                "connect it to a sink or remove the step"
            )

    def transactional_sinks(self) -> dict[types.StepId, sinks.Sink]:
        """Every sink committed with checkpoints, by the name its transactions travel
        under: the sink steps, and the dead letters of each step that sends rejects there."""
        found: dict[types.StepId, sinks.Sink] = {
            s.step_id: s.sink for s in self._steps.values() if isinstance(s, defs.SinkStep)
        }
        if self.dead_letters is not None:
            for step in self._steps.values():
                if error_policy(step) == "dead-letter":
                    found[dead_letter_step(step.step_id)] = self.dead_letters
        return found

    def _validate_error_policies(self) -> None:
        for step in self._steps.values():
            policy = error_policy(step)
            if policy not in defs.ON_ERROR_POLICIES:
                raise InvalidDataflowError(
                    f"step {step.step_id!r}: on_error must be one of "
                    f"{', '.join(map(repr, defs.ON_ERROR_POLICIES))}, not {policy!r}"
                )
            if policy == "dead-letter" and self.dead_letters is None:
                raise InvalidDataflowError(
                    f"step {step.step_id!r} sends rejected records to dead letters, but "
                    f"dataflow {self.name!r} has no dead-letter sink: "
                    "pass Dataflow(..., dead_letters=<a sink>)"
                )

    # -- internals used by Stream -------------------------------------------------

    def _new_id(self, step_id: str) -> types.StepId:
        if not isinstance(step_id, str) or not step_id:
            raise InvalidDataflowError(f"step ids must be non-empty strings, got {step_id!r}")
        if "/" in step_id or step_id.startswith("_"):
            raise InvalidDataflowError(
                f"step id {step_id!r} may not contain '/' or start with '_' "
                "(step ids name storage paths)"
            )
        if step_id in self._steps:
            raise InvalidDataflowError(
                f"duplicate step id {step_id!r} in dataflow {self.name!r}: step ids name "
                "persisted state and must be unique"
            )
        return types.StepId(step_id)

    def _add(self, step: defs.Step) -> types.StepId:
        self._steps[step.step_id] = step
        return step.step_id

    def _consume(
        self,
        stream: object,
        by: str,
        partitioning: defs.Partitioning = defs.Partitioning.FORWARD,
        key_fn: defs.KeyFn | None = None,
        key_column: str | None = None,
    ) -> defs.Input:
        if not isinstance(stream, Stream):
            raise InvalidDataflowError(
                f"step {by!r}: expected a Stream, got {type(stream).__name__}"
            )
        if stream.flow is not self:
            raise InvalidDataflowError(f"step {by!r}: stream belongs to another dataflow")
        upstream = self._steps[stream.step_id]
        if isinstance(upstream, defs.SinkStep):
            raise InvalidDataflowError(f"step {by!r}: a sink ({stream.step_id!r}) has no output")
        self._consumed.add(stream.step_id)
        return defs.Input(stream.step_id, partitioning, key_fn, key_column)


def dead_letter_step(step_id: str) -> types.StepId:
    """The name the dead letters of ``step_id`` commit under (never a user's step id)."""
    return types.StepId(DEAD_LETTER_PREFIX + step_id)


def error_policy(step: defs.Step) -> str:
    """What ``step`` does with a record it cannot process (a source: its ``on_error``)."""
    if isinstance(step, defs.SourceStep):
        return str(getattr(step.source, "on_error", "fail"))
    return str(getattr(step, "on_error", "fail"))
