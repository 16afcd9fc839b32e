"""Run the real ``cjob`` executable as a user does (a subprocess), logs in a temporary folder.

``cjob(*argv, env=…)`` returns a :class:`CliRun` whose ``assert_mistake(*words)``
checks the contract for user and environment mistakes: exit code 2, one
``cjob: error:`` sentence with the given words, no traceback on stderr, and a
``cjob: details:`` line naming a log file that holds the traceback.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

CJOB = pathlib.Path(sys.executable).with_name("cjob")
OK_PIPELINE = """
from barrier_runtime.api import Dataflow
from barrier_runtime.connectors.testing import TestingSink, TestingSource
flow = Dataflow("p")
flow.source("in", TestingSource([{"x": 1}])).sink("out", TestingSink())
"""


@dataclass(frozen=True)
class CliRun:
    code: int
    out: str
    err: str
    seconds: float

    @property
    def log(self) -> pathlib.Path:
        match = re.search(r"^cjob: details: (\S+) \(or run with --verbose\)$", self.err, re.M)
        assert match, self.err
        return pathlib.Path(match.group(1))

    def assert_mistake(self, *words: str) -> str:
        """Exit 2, one sentence containing ``words``, the traceback in the log only."""
        assert self.code == 2, self.err
        assert "Traceback" not in self.err
        error, details = self.err.strip().splitlines()
        assert error.startswith("cjob: error: "), self.err
        for word in words:
            assert word in error, f"{word!r} not in {error!r}"
        assert details.startswith("cjob: details: ")
        text = self.log.read_text()
        assert "Traceback (most recent call last)" in text and error in text
        return error.removeprefix("cjob: error: ")


@pytest.fixture
def log_dir(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / "logs"


@pytest.fixture
def cjob(tmp_path: pathlib.Path, log_dir: pathlib.Path) -> Callable[..., CliRun]:
    def run(*argv: str, env: dict[str, str] | None = None) -> CliRun:
        started = time.monotonic()
        done = subprocess.run(
            [str(CJOB), *argv], capture_output=True, text=True, timeout=120, check=False,
            cwd=tmp_path, env={**os.environ, "CJOB_LOG_DIR": str(log_dir), **(env or {})},
        )  # fmt: skip
        return CliRun(done.returncode, done.stdout, done.stderr, time.monotonic() - started)

    return run


@pytest.fixture
def ok_pipeline(tmp_path: pathlib.Path) -> str:
    path = tmp_path / "ok.py"
    path.write_text(OK_PIPELINE)
    return str(path)
