"""A worker settles pyarrow's lazy imports before data flows (barrier_runtime.core.arrow_imports).

With pandas installed, pyarrow imports it on its first conversion of Python objects: 57 MiB
and 0.23 s that would otherwise land on a worker's first batch (and inflate the memory the
back-pressure test attributes to data in flight). After ``settle()`` the conversion a worker
makes on its first batch imports nothing more.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

PROBE = textwrap.dedent(
    """
    import sys
    import pyarrow as pa
    from barrier_runtime.core import arrow_imports
    if sys.argv[1] == "settle":
        arrow_imports.settle()
    before = set(sys.modules)
    pa.RecordBatch.from_pylist([{"key": "a", "count": 1}])
    print(sorted(set(sys.modules) - before))
    """
)


def _new_modules(mode: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_after_settle_the_first_batch_imports_nothing() -> None:
    pytest.importorskip("pandas", reason="pyarrow imports nothing lazily without pandas")
    assert "pandas" in _new_modules("lazy")  # what a worker's first batch paid
    assert _new_modules("settle") == "[]"
