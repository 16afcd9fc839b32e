"""Run ``cjob`` in-process (``barrier_runtime.cli.main``) with its logs in a temporary folder.

``cjob(*argv)`` returns a :class:`CliResult` whose ``assert_mistake(*words)``
checks the contract for user and environment mistakes: exit code 2, one
``cjob: error:`` sentence with the given words, no traceback on stderr, and a
``cjob: details:`` line naming a log file that holds the traceback.
"""

from __future__ import annotations

import pathlib
import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from barrier_runtime.cli import logfile, main

OK_PIPELINE = """
from barrier_runtime.api import Dataflow
from barrier_runtime.connectors.testing import TestingSink, TestingSource
flow = Dataflow("p")
flow.source("in", TestingSource([{"x": 1}])).sink("out", TestingSink())
"""


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.err.strip().splitlines()

    @property
    def log(self) -> pathlib.Path:
        match = re.search(r"^cjob: details: (\S+) \(or run with --verbose\)$", self.err, re.M)
        assert match, self.err
        return pathlib.Path(match.group(1))

    def assert_mistake(self, *words: str) -> str:
        """Exit 2, one sentence containing ``words``, the traceback in the log only."""
        assert self.code == 2, self.err
        assert "Traceback" not in self.err
        error, details = self.lines
        assert error.startswith("cjob: error: "), self.err
        for word in words:
            assert word in error, f"{word!r} not in {error!r}"
        assert details.startswith("cjob: details: ")
        text = self.log.read_text()
        assert "Traceback (most recent call last)" in text and error in text
        return error.removeprefix("cjob: error: ")


@pytest.fixture
def log_dir(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    path = tmp_path / "logs"
    monkeypatch.setenv(logfile.LOG_DIR_ENV, str(path))
    return path


@pytest.fixture
def cjob(capsys: pytest.CaptureFixture[str], log_dir: pathlib.Path) -> Callable[..., CliResult]:
    def run(*argv: str) -> CliResult:
        code = main(list(argv))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture
def ok_pipeline(tmp_path: pathlib.Path) -> str:
    path = tmp_path / "ok.py"
    path.write_text(OK_PIPELINE)
    return str(path)
