"""The ``cjob`` command line as a user runs it (subprocesses, real exit codes and output)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

CJOB = [sys.executable, "-m", "barrier_runtime.cli"]


def cjob(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CJOB, *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.slow
def test_demo_on_a_local_store_is_exactly_once_and_checkpoints_can_be_inspected(tmp_path) -> None:
    store = f"file://{tmp_path}"
    done = cjob(
        "demo",
        "--keys",
        "200",
        "--events-per-key",
        "200",
        "--rate",
        "20000",
        "--interval",
        "0.2",
        "--store",
        store,
        "--json",
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["exactly_once"] and summary["records"] == 40_000
    # A Spark worker process was SIGKILLed; the stage restarted from a checkpoint.
    assert summary["killed"]["attempt"] == 0
    assert summary["restarts"] == 1 and summary["restored_from"]
    assert any("WorkerLostError" in failure for failure in summary["failures"])
    run_dir = next(p for p in tmp_path.iterdir() if p.is_dir())
    cp_url = f"file://{run_dir}/checkpoints"

    listed = cjob("checkpoints", "list", "--store", cp_url, "--job", "demo/running-count", "--json")
    assert listed.returncode == 0, listed.stderr
    ids = [row["id"] for row in json.loads(listed.stdout)]
    assert ids and ids == sorted(ids)

    ok = cjob(
        "checkpoints", "verify", "--store", cp_url, "--job", "demo/running-count", str(ids[-1])
    )
    assert ok.returncode == 0 and "intact" in ok.stdout

    shown = cjob(
        "checkpoints",
        "show",
        "--store",
        cp_url,
        "--job",
        "demo/running-count",
        str(ids[-1]),
        "--json",
    )
    assert json.loads(shown.stdout)["checkpoint_id"] == ids[-1]

    # Corrupt one state object: verify reports it and exits 1.
    state = next((run_dir / "checkpoints").rglob("count/0.arrow"))
    state.write_bytes(b"garbage")
    victim = int(state.parent.parent.name.split("-")[1])
    bad = cjob(
        "checkpoints", "verify", "--store", cp_url, "--job", "demo/running-count", str(victim)
    )
    assert bad.returncode == 1 and "problem" in bad.stdout

    gone = cjob(
        "checkpoints", "delete", "--store", cp_url, "--job", "demo/running-count", str(victim)
    )
    assert gone.returncode == 0
    relisted = cjob(
        "checkpoints", "list", "--store", cp_url, "--job", "demo/running-count", "--json"
    )
    assert victim not in [row["id"] for row in json.loads(relisted.stdout)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("checkpoints", "show", "--store", "s3://", "--job", "a/b", "1"), "cjob: error:"),
        (
            ("checkpoints", "show", "--store", "/nonexistent-dir", "--job", "a/b", "7"),
            "cjob: error:",
        ),
    ],
)
def test_user_mistakes_get_one_line_and_exit_2(args, message) -> None:
    done = cjob(*args)
    assert done.returncode == 2
    assert done.stderr.startswith(message)
    assert "Traceback" not in done.stderr
    _error, details = done.stderr.strip().splitlines()
    assert details.startswith("cjob: details: ") and details.endswith("(or run with --verbose)")


def test_help_lists_the_commands() -> None:
    done = cjob("--help")
    assert done.returncode == 0
    assert "demo" in done.stdout and "checkpoints" in done.stdout
