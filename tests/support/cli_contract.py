"""The CLI's contract for mistakes, shared by the in-process and the subprocess CLI tests.

A mistake of the user or the environment ends ``cjob`` with exit code 2, one
``cjob: error:`` sentence, a ``cjob: details:`` line naming a log file that
holds the traceback, and no traceback on stderr (:meth:`CliOutcome.assert_mistake`).
"""

from __future__ import annotations

import pathlib
import re
from dataclasses import dataclass

OK_PIPELINE = """
from barrier_runtime.api import Dataflow
from barrier_runtime.testing import TestingSink, TestingSource
flow = Dataflow("p")
flow.source("in", TestingSource([{"x": 1}])).sink("out", TestingSink())
"""
_DETAILS = re.compile(r"^cjob: details: (\S+) \(or run with --verbose\)$", re.M)


@dataclass(frozen=True)
class CliOutcome:
    """What one ``cjob`` invocation printed, and its exit code."""

    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.err.strip().splitlines()

    @property
    def log(self) -> pathlib.Path:
        match = _DETAILS.search(self.err)
        assert match, self.err
        return pathlib.Path(match.group(1))

    def assert_mistake(self, *words: str, code: int = 2) -> str:
        """Exit ``code`` (2: a mistake in the input; 75: the environment may heal), one
        sentence containing ``words``, the traceback in the log only."""
        assert self.code == code, self.err
        assert "Traceback" not in self.err
        error, details = self.lines
        assert error.startswith("cjob: error: "), self.err
        for word in words:
            assert word in error, f"{word!r} not in {error!r}"
        assert details.startswith("cjob: details: ")
        text = self.log.read_text()
        assert "Traceback (most recent call last)" in text and error in text
        return error.removeprefix("cjob: error: ")
