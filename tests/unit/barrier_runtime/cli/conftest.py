"""Run ``cjob`` in-process (``barrier_runtime.cli.main``) with its logs in a temporary folder.

``cjob(*argv)`` returns a :class:`CliResult` whose ``assert_mistake(*words)``
checks the contract for user and environment mistakes: exit code 2, one
``cjob: error:`` sentence with the given words, no traceback on stderr, and a
``cjob: details:`` line naming a log file that holds the traceback.
``refused(*argv)`` also checks that the mistake was found before Spark started
(a recording double in place of ``build_session``) and in less time than
Spark takes to start.
"""

from __future__ import annotations

import pathlib
import time
from collections.abc import Callable
from dataclasses import dataclass

import cli_contract
import pytest

from barrier_runtime.cli import local_jobs, logfile, main
from barrier_runtime.spark import session

OK_PIPELINE = cli_contract.OK_PIPELINE
CliResult = cli_contract.CliOutcome


@pytest.fixture
def log_dir(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    path = tmp_path / "logs"
    monkeypatch.setenv(logfile.LOG_DIR_ENV, str(path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)  # not in a pod (see failures)
    return path


@pytest.fixture
def cjob(
    capsys: pytest.CaptureFixture[str], log_dir: pathlib.Path, jobs_dir: pathlib.Path
) -> Callable[..., CliResult]:
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


SPARK_START = 5.0
"""Spark's start alone takes longer than this here (7 s or more): failing sooner proves it never
ran; :func:`spark_starts` proves it directly."""


@pytest.fixture
def spark_starts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every attempt to build a SparkSession, recorded (and refused: unit tests never start Spark).

    A command that gets past its checks reaches ``build_session``, which then
    ends it with a :class:`~barrier_runtime.spark.session.SparkUnavailableError`.
    """
    calls: list[str] = []

    def build_session(master: str, **_: object) -> object:
        calls.append(master)
        raise session.SparkUnavailableError("this unit test does not start Spark")

    monkeypatch.setattr(session, "build_session", build_session)
    return calls


@dataclass(frozen=True)
class Refused:
    """A command refused before Spark: its sentence, its output, and how long it took."""

    sentence: str
    result: CliResult
    seconds: float


@pytest.fixture
def refused(cjob: Callable[..., CliResult], spark_starts: list[str]) -> Callable[..., Refused]:
    """Run ``cjob``; check the mistake contract, that Spark never started, and the time taken."""

    def run(*argv: str, code: int = 2) -> Refused:
        """``code``: 2 for a mistake in the input, 75 for an environment that may heal."""
        started = time.monotonic()
        result = cjob(*argv)
        seconds = time.monotonic() - started
        sentence = result.assert_mistake(code=code)
        assert spark_starts == [], "Spark was started before the mistake was found"
        assert "starting Spark" not in result.out
        assert seconds < SPARK_START, seconds
        return Refused(sentence, result, seconds)

    return run


@pytest.fixture
def jobs_dir(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """Where ``cjob run`` publishes its control API (``$CJOB_JOBS_DIR``) for this test."""
    path = tmp_path / "jobs"
    monkeypatch.setenv(local_jobs.JOBS_DIR_ENV, str(path))
    return path
