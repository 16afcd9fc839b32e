"""Loading the user's pipeline from a file or module, identically on the driver and the workers.

A pipeline is a Python file (``pipeline.py``) or an importable module
(``my_jobs.orders``) that exposes either ``flow`` (a
:class:`~barrier_runtime.api.dataflow.Dataflow`) or ``build_flow(args)``
returning one (``args`` are the pipeline's own command-line arguments).

Workers load the pipeline themselves from the same reference instead of
receiving the driver's dataflow pickled in the Spark task closure: user
steps are lambdas and closures over module globals, sources and sinks may
hold clients and locks, and a file run as a script is not importable by
name — pickling that graph (even with cloudpickle) is fragile and silently
version-dependent. Loading by reference is deterministic; the driver sends
the plan's fingerprint (step ids, parallelisms) and every worker checks that
its own plan matches before it runs anything.

>>> PipelineRef.parse("my_jobs.orders", ["--region", "eu"])
PipelineRef(file=None, module='my_jobs.orders', args=('--region', 'eu'))
>>> load_flow(PipelineRef.parse("barrier_runtime.clock"))
Traceback (most recent call last):
...
barrier_runtime.spark.pipeline.InvalidPipelineError: pipeline module barrier_runtime.clock must ...
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import pathlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from barrier_runtime.api import dataflow


class InvalidPipelineError(ValueError):
    """The pipeline reference cannot be loaded into a dataflow; the message says why."""


@dataclass(frozen=True, slots=True)
class PipelineRef:
    """Where a pipeline lives: exactly one of ``file`` and ``module``, plus its arguments."""

    file: str | None = None
    module: str | None = None
    args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.file is None) == (self.module is None):
            raise InvalidPipelineError("name the pipeline by exactly one of a file or a module")

    @classmethod
    def parse(cls, reference: str, args: Sequence[str] = ()) -> PipelineRef:
        """``path/to/pipeline.py`` (or any existing file) → file; ``pkg.module`` → module."""
        path = pathlib.Path(reference)
        if reference.endswith(".py") or path.exists():
            return cls(file=str(path.resolve()), args=tuple(args))
        return cls(module=reference, args=tuple(args))

    def describe(self) -> str:
        return self.file if self.file is not None else f"module {self.module}"


def load_flow(ref: PipelineRef) -> dataflow.Dataflow:
    """Import the pipeline and return its dataflow (:class:`InvalidPipelineError` if none)."""
    namespace = _import(ref)
    build = getattr(namespace, "build_flow", None)
    if callable(build):
        try:
            flow = build(list(ref.args))
        except SystemExit as exc:  # argparse inside build_flow
            raise InvalidPipelineError(
                f"pipeline {ref.describe()} rejected its arguments {list(ref.args)} (exit {exc})"
            ) from None
    else:
        flow = getattr(namespace, "flow", None)
        if ref.args and flow is not None:
            raise InvalidPipelineError(
                f"pipeline {ref.describe()} takes no arguments (it has no build_flow(args))"
            )
    if not isinstance(flow, dataflow.Dataflow):
        raise InvalidPipelineError(
            f"pipeline {ref.describe()} must define `flow` (a Dataflow) or `build_flow(args)` "
            f"returning one; found {type(flow).__name__}"
        )
    return flow


def _import(ref: PipelineRef) -> object:
    if ref.module is not None:
        try:
            return importlib.import_module(ref.module)
        except ImportError as exc:
            raise InvalidPipelineError(
                f"cannot import pipeline module {ref.module!r}: {exc}"
            ) from exc
    assert ref.file is not None
    path = pathlib.Path(ref.file)
    if not path.is_file():
        raise InvalidPipelineError(f"pipeline file {ref.file} does not exist")
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    name = f"cjob_pipeline_{path.stem.replace('-', '_')}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise InvalidPipelineError(f"pipeline file {ref.file} is not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        sys.modules.pop(name, None)
        raise InvalidPipelineError(
            f"pipeline file {ref.file} failed to load: {type(exc).__name__}: {exc}"
        ) from exc
    return module
