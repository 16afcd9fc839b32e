"""Every example in every docstring of both packages runs and holds (one place for all doctests)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import barrier_runtime
import cjob_operator


def _modules() -> list[str]:
    names = []
    for package in (barrier_runtime, cjob_operator):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if not info.name.endswith("__main__"):  # running it is the command line
                names.append(info.name)
    return sorted(names)


MODULES = _modules()


def test_the_examples_cover_the_core_packages() -> None:
    assert {"barrier_runtime.demo", "barrier_runtime.spark.pipeline"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} example(s) in {name} failed"
