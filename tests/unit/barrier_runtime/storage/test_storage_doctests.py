"""The examples in the storage package's docstrings run."""

from __future__ import annotations

import doctest
import types

import pytest

from barrier_runtime.storage import (
    checkpoint_store,
    embedded,
    integrity,
    layout,
    local,
    object_store,
    retention,
    s3,
)

MODULES = [checkpoint_store, embedded, integrity, layout, local, object_store, retention, s3]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_docstring_examples(module: types.ModuleType) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
