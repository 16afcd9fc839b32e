"""Run ``cjob`` in-process (``barrier_runtime.cli.main``) with its logs in a temporary folder.

``cjob(*argv)`` returns a :class:`CliResult` whose ``assert_mistake(*words)``
checks the contract for user and environment mistakes: exit code 2, one
``cjob: error:`` sentence with the given words, no traceback on stderr, and a
``cjob: details:`` line naming a log file that holds the traceback.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable

import cli_contract
import pytest

from barrier_runtime.cli import logfile, main

OK_PIPELINE = cli_contract.OK_PIPELINE
CliResult = cli_contract.CliOutcome


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
