"""The examples in the checkpoint package's docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "barrier_runtime.checkpoint.pending",
    "barrier_runtime.checkpoint.outcomes",
    "barrier_runtime.checkpoint.testing",
    "barrier_runtime.checkpoint.policies.periodic",
    "barrier_runtime.checkpoint.policies.min_pause",
    "barrier_runtime.checkpoint.policies.concurrency",
    "barrier_runtime.checkpoint.policies.timeout",
    "barrier_runtime.checkpoint.policies.failures",
    "barrier_runtime.checkpoint.policies.retention",
    "barrier_runtime.checkpoint.policies.barriers",
    "barrier_runtime.checkpoint.policies.subsumption",
    "barrier_runtime.checkpoint.policies.requests",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
