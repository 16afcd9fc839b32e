"""Every example in every docstring of both packages runs and holds (one place for all doctests).

The test-support and benchmark packages that used to live inside them
(``barrier_runtime_testing``, ``cjob_operator_testing``, ``cjob_bench``) are walked too.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import barrier_runtime_testing
import cjob_bench
import cjob_operator_testing
import pytest

import barrier_runtime
import cjob_operator

PACKAGES = (
    barrier_runtime,
    cjob_operator,
    barrier_runtime_testing,
    cjob_operator_testing,
    cjob_bench,
)


def _modules() -> list[str]:
    names = []
    for package in PACKAGES:
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if not info.name.endswith("__main__"):  # running it is the command line
                names.append(info.name)
    return sorted(names)


MODULES = _modules()


def test_the_examples_cover_the_core_packages() -> None:
    assert {
        "barrier_runtime.demo",
        "barrier_runtime.spark.pipeline",
        "barrier_runtime.testing",
        "barrier_runtime_testing.checkpoint",
        "cjob_operator_testing.harness",
        "cjob_bench.probe.workload",
    } <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} example(s) in {name} failed"
