"""Reading ``cjob``'s command line: usage errors as values, ``--version``, pipeline arguments.

* :class:`Parser` raises :class:`UsageError` instead of exiting, so that the
  caller can also report a usage error as a JSON event in ``--json`` mode.
* ``cjob run`` takes its own options anywhere, before or after the pipeline;
  everything after the first ``--`` goes to the pipeline
  (:func:`parse`): ``cjob run pipeline.py -p 3 -- --keys 1000``. An unknown
  option or a stray word before ``--`` is an error that says so, rather than
  a pipeline argument taken by surprise.
"""

from __future__ import annotations

import argparse
import importlib.metadata
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

DISTRIBUTION = "checkpointed-jobs"
"""The distribution ``cjob`` comes in (``[project] name`` in pyproject.toml)."""
SEPARATOR = "--"
PIPELINE_COMMANDS = frozenset({"run"})
"""Commands whose arguments after ``--`` belong to the pipeline."""


class UsageError(Exception):
    """The command line does not parse; ``usage`` is the usage line of the (sub)command."""

    def __init__(self, message: str, *, prog: str, usage: str) -> None:
        super().__init__(message)
        self.message = message
        self.prog = prog
        self.usage = usage


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are :class:`UsageError` (sub-commands inherit it)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, prog=self.prog, usage=self.format_usage())


def version() -> str:
    """The installed version of ``cjob`` (``unknown`` when run from a source tree only)."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def parse(build: Callable[[], Parser], argv: Sequence[str]) -> argparse.Namespace:
    """Parse ``argv``; for ``cjob run`` the words after ``--`` become ``pipeline_args``."""
    parser = build()
    words = list(argv)
    cut = words.index(SEPARATOR) if SEPARATOR in words else len(words)
    head, tail = words[:cut], words[cut + 1 :]
    args, extra = parser.parse_known_args(head)
    command = getattr(args, "command", None)
    if command not in PIPELINE_COMMANDS:
        return parser.parse_args(words)
    if extra:
        _subcommand(parser, command).error(_stray(extra, command))
    args.pipeline_args = tail
    return args


def json_requested(argv: Sequence[str]) -> bool:
    """Whether ``--json`` is among ``cjob``'s own arguments (not the pipeline's)."""
    words = list(argv)
    cut = words.index(SEPARATOR) if SEPARATOR in words else len(words)
    return "--json" in words[:cut]


def _stray(extra: list[str], command: str) -> str:
    first = extra[0]
    moved = " ".join(extra)
    what = f"unknown option {first}" if first.startswith("-") else f"unexpected argument {first!r}"
    return (
        f"{what}: pipeline arguments go after {SEPARATOR}, as in "
        f"cjob {command} PIPELINE [OPTIONS] {SEPARATOR} {moved}"
    )


def _subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: Any = action.choices.get(name)
            if isinstance(found, argparse.ArgumentParser):
                return found
    return parser
