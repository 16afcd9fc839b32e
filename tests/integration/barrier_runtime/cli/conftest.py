"""Run the real ``cjob`` executable as a user does (a subprocess), logs in a temporary folder.

``cjob(*argv, env=…)`` returns a :class:`CliRun` whose ``assert_mistake(*words)``
checks the contract for user and environment mistakes: exit code 2, one
``cjob: error:`` sentence with the given words, no traceback on stderr, and a
``cjob: details:`` line naming a log file that holds the traceback.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import cli_contract
import pytest

CJOB = pathlib.Path(sys.executable).with_name("cjob")
OK_PIPELINE = cli_contract.OK_PIPELINE


@dataclass(frozen=True)
class CliRun(cli_contract.CliOutcome):
    seconds: float


@pytest.fixture
def log_dir(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / "logs"


@pytest.fixture
def cjob(tmp_path: pathlib.Path, log_dir: pathlib.Path) -> Callable[..., CliRun]:
    def run(*argv: str, env: dict[str, str] | None = None) -> CliRun:
        started = time.monotonic()
        done = subprocess.run(
            [str(CJOB), *argv],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=tmp_path,
            env={**os.environ, "CJOB_LOG_DIR": str(log_dir), **(env or {})},
        )
        return CliRun(done.returncode, done.stdout, done.stderr, time.monotonic() - started)

    return run


@pytest.fixture
def ok_pipeline(tmp_path: pathlib.Path) -> str:
    path = tmp_path / "ok.py"
    path.write_text(OK_PIPELINE)
    return str(path)
