"""A poisoned record ends a ``cjob run`` on local Spark: no crash loop, the reason named.

The issue's two cases, as a user meets them: a malformed JSON line under the
default ``on_error='fail'``, and the user's own function raising on one record.
Either way the job gives up after ``attemptsPerRecord`` (3) attempts instead of
spending its restart budget of 10, and the one-line reason names the file and
line, or the user's step and the record; the user's traceback is in the log.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
DIVIDE = """
from barrier_runtime.api import Dataflow
from barrier_runtime.testing import TestingSink, TestingSource


def divide(record):
    return {**record, "q": 100 // record["d"]}


def build_flow(args):
    events = [{"n": i, "d": 0 if i == 70 else 1 + i % 5} for i in range(200)]
    flow = Dataflow("divide")
    flow.source("events", TestingSource(events, batch_size=10)).map("divide", divide) \\
        .sink("out", TestingSink())
    return flow
"""


def _cjob(tmp: pathlib.Path, *args: str, env: dict[str, str] | None = None):
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "barrier_runtime.cli",
            "run",
            "-p",
            "2",
            "--checkpoint-interval",
            "0.5",
            "--store",
            str(tmp / "store"),
            *args,
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp,
        env={**os.environ, "CJOB_LOG_DIR": str(tmp / "logs"), **(env or {})},
    )
    return done, time.monotonic() - started


def _headline(stderr: str) -> str:
    """The failure's one line (the lines before it announce restores and restarts)."""
    return next(line for line in stderr.splitlines() if line.startswith("cjob: job failed: "))


def _log_text(tmp: pathlib.Path) -> str:
    return "\n".join(p.read_text() for p in (tmp / "logs").iterdir())


@pytest.mark.slow
def test_a_malformed_line_fails_the_job_naming_file_and_line(tmp_path) -> None:
    data = tmp_path / "in"
    data.mkdir()
    lines = [f'{{"line": "word{i % 7} and more"}}' for i in range(1000)]
    lines[700] = '{"line": "cut off'
    (data / "a.jsonl").write_text("\n".join(lines) + "\n")
    done, seconds = _cjob(
        tmp_path,
        str(REPO / "examples/pipelines/wordcount.py"),
        env={"CJOB_INPUT": str(data), "CJOB_OUTPUT": str(tmp_path / "out")},
    )
    print(f"malformed line: exit {done.returncode} after {seconds:.1f}s")
    assert done.returncode == 1, done.stderr
    headline = _headline(done.stderr)
    assert re.match(r"cjob: job failed: .*malformed record in .*a\.jsonl line 701", headline)
    assert "same record in 3 attempts" in headline and "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_step_raising_on_a_record_fails_the_job_naming_step_and_record(tmp_path) -> None:
    pipeline = tmp_path / "divide.py"
    pipeline.write_text(DIVIDE)
    done, seconds = _cjob(tmp_path, str(pipeline))
    print(f"user error: exit {done.returncode} after {seconds:.1f}s")
    assert done.returncode == 1, done.stderr
    headline = _headline(done.stderr)
    assert headline.startswith(
        "cjob: job failed: step 'divide' raised ZeroDivisionError: integer division or modulo "
        "by zero on record {'n': 70, 'd': 0} (subtask "
    )
    assert "same record in 3 attempts" in headline and "Traceback" not in done.stderr
    restarts = [line for line in done.stderr.splitlines() if "; restarting" in line]
    assert len(restarts) == 2, done.stderr  # announced: the two restarts before giving up
    log = _log_text(tmp_path)
    assert 'in divide\n    return {**record, "q": 100 // record["d"]}' in log
