"""What ``cjob run`` announces at its default, quiet level: restores, fresh starts, fallbacks."""

from __future__ import annotations

import argparse
import logging

import pytest

from barrier_runtime.cli import run_cmd


@pytest.fixture
def logs_while_running(monkeypatch):
    def install(*records: tuple[str, int, str]) -> None:
        def run(args: argparse.Namespace) -> int:
            for name, level, message in records:
                logging.getLogger(name).log(level, message)
            return 0

        monkeypatch.setattr(run_cmd, "run", run)

    return install


def test_restores_fallbacks_and_fresh_starts_are_announced_quietly(
    cjob, logs_while_running
) -> None:
    logs_while_running(
        (
            "barrier_runtime.storage.checkpoint_store",
            logging.WARNING,
            "restoring chk-21 from file:///s; skipped unusable: chk-22: state object missing",
        ),
        (
            "barrier_runtime.driver.job_driver",
            logging.INFO,
            "attempt 0 restores checkpoint 21 from file:///s",
        ),
        ("barrier_runtime.spark.worker", logging.INFO, "internal chatter"),
    )
    result = cjob("run", "p.py")
    assert result.code == 0
    assert result.err.splitlines() == [
        "cjob: warning: restoring chk-21 from file:///s; skipped unusable: chk-22: state "
        "object missing",
        "cjob: attempt 0 restores checkpoint 21 from file:///s",
    ]


def test_sparks_own_errors_stay_in_the_log_file(cjob, logs_while_running) -> None:
    """Java stack traces that py4j and pyspark log while a worker is lost at start-up:
    the log file keeps them, the terminal shows only cjob's one line."""
    logs_while_running(
        ("py4j.clientserver", logging.ERROR, "org.apache.spark.TaskKilledException\n\tat …"),
        ("pyspark.sql", logging.ERROR, "Could not recover from a failed barrier ResultStage"),
    )
    result = cjob("run", "p.py")
    assert result.code == 0 and result.err == ""
    loud = cjob("-vv", "run", "p.py")
    assert "TaskKilledException" in loud.err
