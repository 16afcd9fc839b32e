"""Operator factories keyed by step type: how a chain turns a step into its operator.

Each operator module registers the factory of the step types it runs
(:func:`register`, at import time); :func:`create` looks a step's type up
(along its class hierarchy) and calls the factory with an
:class:`OperatorContext`: the outputs the chain wired for the step and the
subtask's slice of the job. A new step kind adds a module and a registration,
never a branch here.

>>> from barrier_runtime.api import steps
>>> import barrier_runtime.task.operators  # registers every operator family
>>> registered(steps.FilterStep), registered(steps.SourceStep)
(True, False)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from barrier_runtime.api import steps
from barrier_runtime.core import clock as clocks
from barrier_runtime.state import backends, keyed
from barrier_runtime.task.operators import base


class UnknownStepTypeError(TypeError):
    """No operator factory is registered for a step type (a step kind the engine cannot run)."""


@dataclass(frozen=True, slots=True)
class OperatorContext:
    """What a factory may wire its operator to, fixed when the chain is built."""

    emit: base.Emit
    """The step's output: chained operators and network channels downstream."""
    side_output: base.Emit | None
    """The output of the step's side-output step (late records), if it has one."""
    reject: base.Reject | None
    """Where records the user's function raised on go (``on_error`` skip or dead-letter)."""
    key_group_range: tuple[int, int]
    max_parallelism: int
    subtask: int
    parallelism: int
    clock: clocks.Clock
    on_commit: base.CommitHook
    """Called before a sink commits a checkpoint's transaction (the COMMIT fault point)."""
    states: backends.KeyedStates = field(default_factory=backends.InMemory)
    """Makes the step's keyed state, in memory or on disk as the job is configured."""

    def keyed_state(self, name: str, content: bytes = keyed.VALUES) -> keyed.KeyedState:
        """The keyed state ``name`` (the step id, plus a suffix if it keeps several)."""
        return self.states.create(name, self.key_group_range, self.max_parallelism, content)


Factory = Callable[[Any, OperatorContext], base.Operator]
"""Builds the operator of one step (of the registered type) on one subtask."""
_F = TypeVar("_F", bound=Factory)
_FACTORIES: dict[type[steps.Step], Factory] = {}


def register(*step_types: type[steps.Step]) -> Callable[[_F], _F]:
    """Register the decorated factory for ``step_types`` (one factory per type)."""

    def add(factory: _F) -> _F:
        for step_type in step_types:
            if step_type in _FACTORIES:
                raise ValueError(f"{step_type.__name__} already has an operator factory")
            _FACTORIES[step_type] = factory
        return factory

    return add


def registered(step_type: type[steps.Step]) -> bool:
    return any(t in _FACTORIES for t in step_type.__mro__)


def create(step: steps.Step, ctx: OperatorContext) -> base.Operator:
    """The operator of ``step`` on this subtask, from its registered factory."""
    for step_type in type(step).__mro__:
        factory = _FACTORIES.get(step_type)
        if factory is not None:
            return factory(step, ctx)
    raise UnknownStepTypeError(
        f"step {step.step_id!r} is a {type(step).__name__}, which no operator runs"
    )
