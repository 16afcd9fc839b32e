"""The examples in the driver and Spark packages' docstrings run."""

from __future__ import annotations

import doctest
import types

import pytest

from barrier_runtime.driver import restart
from barrier_runtime.spark import pipeline

MODULES = [restart, pipeline]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_docstring_examples(module: types.ModuleType) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
