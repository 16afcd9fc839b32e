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
>>> load_flow(PipelineRef.parse("barrier_runtime.core"))
Traceback (most recent call last):
...
barrier_runtime.spark.pipeline.NoDataflowError: pipeline module barrier_runtime.core defines ...

Every mistake is one :class:`InvalidPipelineError` sentence that names the
file (and line) and says what to do; the original exception is its cause.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import pathlib
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from barrier_runtime import task_failure
from barrier_runtime.api import dataflow


class InvalidPipelineError(task_failure.PermanentFailure, ValueError):
    """The pipeline reference cannot be loaded into a dataflow; the message says why."""


class PipelineNotFoundError(InvalidPipelineError):
    """No pipeline file or module where the reference points (or it is not Python)."""


class PipelineLoadError(InvalidPipelineError):
    """Importing the pipeline failed: a syntax error, a missing import, an exception."""


class PipelineBuildError(InvalidPipelineError):
    """``build_flow(args)`` raised, or rejected its arguments."""


class NoDataflowError(InvalidPipelineError):
    """The pipeline defines no ``flow`` / ``build_flow(args)``, or they give no Dataflow."""


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
        """``path/to/pipeline.py`` (or any existing path) → file; ``pkg.module`` → module."""
        path = pathlib.Path(reference)
        if reference.endswith(".py") or "/" in reference or path.exists():
            return cls(file=str(path.resolve()), args=tuple(args))
        return cls(module=reference, args=tuple(args))

    def describe(self) -> str:
        return self.file if self.file is not None else f"module {self.module}"


def load_flow(ref: PipelineRef) -> dataflow.Dataflow:
    """Import the pipeline and return its dataflow (:class:`InvalidPipelineError` if none)."""
    namespace = _import(ref)
    build = getattr(namespace, "build_flow", None)
    if callable(build):
        flow = _build(ref, build)
        what = "build_flow(args) returned"
    else:
        flow = getattr(namespace, "flow", None)
        what = "`flow` is"
        if flow is None:
            raise NoDataflowError(
                f"pipeline {ref.describe()} defines neither `flow` nor `build_flow(args)`: add "
                "`flow = Dataflow(...)` or a `build_flow(args)` that returns one"
            )
        if ref.args:
            raise InvalidPipelineError(
                f"pipeline {ref.describe()} takes no arguments (it has no build_flow(args)): "
                "drop the arguments after -- or define build_flow(args)"
            )
    if not isinstance(flow, dataflow.Dataflow):
        raise NoDataflowError(
            f"pipeline {ref.describe()}: {what} {type(flow).__name__}, not a Dataflow: "
            "it must be the barrier_runtime.api.Dataflow the pipeline builds"
        )
    return flow


def _build(ref: PipelineRef, build: Callable[[list[str]], object]) -> object:
    try:
        return build(list(ref.args))
    except SystemExit as exc:  # argparse inside build_flow
        raise PipelineBuildError(
            f"pipeline {ref.describe()} rejected its arguments {list(ref.args)} (exit {exc}): "
            "fix the arguments after --"
        ) from None
    except Exception as exc:
        raise PipelineBuildError(
            f"pipeline {ref.describe()} failed in build_flow({list(ref.args)}): "
            f"{_what(exc)}{_where(exc, _source(build))}: fix build_flow or its arguments"
        ) from exc


def _import(ref: PipelineRef) -> object:
    if ref.module is not None:
        return _import_module(ref.module)
    assert ref.file is not None
    path = pathlib.Path(ref.file)
    _check_file(path)
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    name = f"cjob_pipeline_{path.stem.replace('-', '_')}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PipelineNotFoundError(
            f"pipeline file {path} is not a Python file: give a .py file or an importable "
            "module name"
        )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        sys.modules.pop(name, None)
        raise PipelineLoadError(_load_failure(f"pipeline file {path}", exc, str(path))) from exc
    return module


def _check_file(path: pathlib.Path) -> None:
    if path.is_dir():
        raise PipelineNotFoundError(
            f"pipeline {path} is a directory: give the .py file that defines `flow` or "
            "`build_flow(args)`"
        )
    if not path.exists():
        raise PipelineNotFoundError(
            f"pipeline file {path} does not exist: check the path, or name an importable "
            "module (my_jobs.orders)"
        )


def _import_module(module: str) -> object:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module == exc.name or module.startswith(f"{exc.name}.")):
            raise PipelineNotFoundError(
                f"pipeline module {module!r} cannot be found: check its name and that it is "
                "importable here (PYTHONPATH), or give the path of a .py file"
            ) from exc
        raise PipelineLoadError(_load_failure(f"pipeline module {module}", exc, None)) from exc
    except (Exception, SystemExit) as exc:
        raise PipelineLoadError(_load_failure(f"pipeline module {module}", exc, None)) from exc


def _load_failure(what: str, exc: BaseException, file: str | None) -> str:
    """One sentence for an exception raised while importing the pipeline."""
    if isinstance(exc, SyntaxError):
        where = f"line {exc.lineno}"
        if exc.filename != file:
            where = f"{exc.filename}, {where}"
        return f"{what} has a syntax error at {where}: {exc.msg}: fix it and run again"
    where = _where(exc, file)
    if isinstance(exc, ImportError) and exc.name:
        return (
            f"{what} cannot import {exc.name!r}{where}: install it into this Python "
            f"({sys.executable}) or fix the import"
        )
    return f"{what} failed to load: {_what(exc)}{where}: fix the pipeline"


def _what(exc: BaseException) -> str:
    message = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _where(exc: BaseException, file: str | None) -> str:
    """`` (line N)`` of the innermost frame in ``file`` (any file's when ``None``)."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if file is None or f.filename == file]
    if not mine:
        return ""
    frame = mine[-1]
    if file is not None:
        return f" (line {frame.lineno})"
    return f" ({frame.filename}, line {frame.lineno})"


def _source(function: object) -> str | None:
    code = getattr(function, "__code__", None)
    return None if code is None else str(code.co_filename)
