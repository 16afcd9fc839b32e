"""Benchmarks run the way users do: with a bytecode cache.

Installing a package compiles its modules, so a user's workers import
bytecode. This machine sets ``PYTHONDONTWRITEBYTECODE=1``, which would make
every benchmark worker compile the runtime from source at start-up and
charge that to the measured job. :func:`use_bytecode_cache` compiles the
runtime and the benchmark files once and lets the processes the benchmark
starts (the Spark JVM's Python workers among them) read and write the cache.
"""

from __future__ import annotations

import compileall
import os
import pathlib
import sys

BENCH = pathlib.Path(__file__).resolve().parents[2]
RUNTIME_SRC = BENCH.parent / "runtime" / "src"


def use_bytecode_cache() -> None:
    """Compile the runtime and ``bench/`` and allow bytecode caches in this process and its children."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False
    compileall.compile_dir(str(RUNTIME_SRC), quiet=1)
    compileall.compile_dir(str(BENCH), quiet=1)
