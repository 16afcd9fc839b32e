"""Operators come from factories keyed by step type: every step kind but a source has one."""

from __future__ import annotations

import typing

import pytest

from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import steps
from barrier_runtime.core import clock, types
from barrier_runtime.task import operators
from barrier_runtime.task.operators import registry
from barrier_runtime.testing import TestingSource


def test_every_step_kind_but_a_source_has_an_operator_factory() -> None:
    kinds = typing.get_args(steps.Step)
    missing = [
        k.__name__ for k in kinds if k is not steps.SourceStep and not registry.registered(k)
    ]
    assert missing == []
    assert not registry.registered(steps.SourceStep)  # the chain's source reader reads it


def _context(emitted: list[object]) -> registry.OperatorContext:
    return registry.OperatorContext(
        emit=emitted.append,
        side_output=None,
        reject=None,
        key_group_range=(0, 127),
        max_parallelism=128,
        subtask=0,
        parallelism=1,
        clock=clock.SystemClock(),
        on_commit=lambda checkpoint_id: None,
    )


def test_the_factory_of_a_step_type_builds_its_operator_wired_to_the_given_output() -> None:
    emitted: list[object] = []
    step = steps.FilterStep(
        types.StepId("evens"),
        steps.Input(types.StepId("in"), steps.Partitioning.FORWARD),
        lambda r: r["n"] % 2 == 0,
    )
    op = registry.create(step, _context(emitted))
    assert isinstance(op, operators.stateless.FilterOperator)
    op.process(batch_mod.Batch.from_rows([{"n": n} for n in (1, 2, 3, 4)]), 0)
    assert [list(b.rows()) for b in emitted if isinstance(b, batch_mod.Batch)] == [
        [{"n": 2}, {"n": 4}]
    ]


def test_a_step_type_without_a_factory_is_a_named_error() -> None:
    source = steps.SourceStep(types.StepId("src"), TestingSource([]))
    with pytest.raises(registry.UnknownStepTypeError, match="'src' is a SourceStep"):
        registry.create(source, _context([]))


def test_a_step_type_registers_one_factory_only() -> None:
    with pytest.raises(ValueError, match="FilterStep already has an operator factory"):
        registry.register(steps.FilterStep)(
            lambda step, ctx: operators.stateless.PassThroughOperator(step.step_id, ctx.emit)
        )
