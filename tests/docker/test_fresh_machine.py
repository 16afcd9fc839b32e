"""First contact: the README's quick start on a fresh machine with only Python and git.

``scripts/fresh-machine.sh`` runs once per module: in a container of a Debian image
that has ``python3``, ``python3-venv``, ``python3-pip``, ``git`` and
``ca-certificates`` and nothing else (no Java, no Docker), as an unprivileged user, a
fresh ``git clone`` of the committed HEAD runs ``./scripts/demo.sh`` exactly as the
README says, then the README's ``cjob run`` of ``examples/pipelines/wordcount.py``.
Each test asserts one step of the script's report; the logs (``demo.log``,
``wordcount.log``) and the report stay in ``build/fresh-machine/``. Uncommitted changes
are not part of the clone: commit before relying on this test.

Whether Docker can run here is ``docker_gate``'s decision, as for the image tests. The
first run makes the images (about 2 minutes); every run then installs the project from
PyPI into the clone's new ``.venv`` (about 2 minutes) and runs the two jobs.
"""

from __future__ import annotations

import re
import subprocess

import pytest
from docker_testing import docker_harness

WORKDIR = docker_harness.ROOT / "build" / "fresh-machine"
SCRIPT_TIMEOUT = 3600
VERIFIED = re.compile(r"^\[ *[0-9.]+s\] ((?:OK|FAILED): .*)$", re.M)

pytestmark = pytest.mark.timeout(SCRIPT_TIMEOUT + 120)

Run = docker_harness.ScriptRun


@pytest.fixture(scope="module")
def fresh() -> Run:
    return docker_harness.run_script(
        "fresh-machine.sh",
        WORKDIR,
        env={"CJOB_FRESH_WORKDIR": str(WORKDIR)},
        timeout=SCRIPT_TIMEOUT,
    )


def test_fresh_machine_script_passes(fresh: Run) -> None:
    assert (fresh.exit_code, fresh.failed()) == (0, {}), f"see {fresh.log}"


def test_image_has_python_and_git_but_no_java(fresh: Run) -> None:
    detail = fresh.step("java_absent")["detail"]
    assert detail.startswith("no java, no JVM directory in cjob-fresh-python:"), detail
    assert "uid 1000" in detail and "Python 3." in detail and "git version" in detail, detail


def test_the_clone_is_a_committed_revision(fresh: Run) -> None:
    detail = fresh.step("clone")["detail"]
    match = re.match(r"HEAD ([0-9a-f]{40}) ", detail)
    assert match, detail
    # HEAD may have moved on since; the clone's commit is still in its history.
    ancestor = subprocess.run(
        ["git", "merge-base", "--is-ancestor", match.group(1), "HEAD"],
        cwd=docker_harness.ROOT,
        check=False,
    )
    assert ancestor.returncode == 0, f"{match.group(1)} is not a commit of HEAD's history"


def test_demo_verifies_exactly_once(fresh: Run) -> None:
    """``./scripts/demo.sh``, nothing else: the last line is the verified result."""
    detail = fresh.step("demo")["detail"]
    assert detail.startswith("OK: "), detail
    assert "lost 0, duplicated 0, out-of-order 0" in detail, detail
    verified = VERIFIED.findall((WORKDIR / "demo.log").read_text())
    assert verified[-1:] == [detail]


def test_demo_kills_a_worker_and_restores_a_checkpoint(fresh: Run) -> None:
    detail = fresh.step("demo_kill_restore")["detail"]
    assert re.search(r"KILL: SIGKILL to Spark worker \d+ \(pid \d+\)", detail), detail
    assert re.search(r"restores checkpoint \d+", detail), detail


def test_wordcount_publishes_exact_counts(fresh: Run) -> None:
    """Every word's published running counts are exactly 1..n, n its count in the input."""
    detail = fresh.step("wordcount")["detail"]
    assert re.match(r"OK: \d+ words, [\d,]+ occurrences in \d+ published file", detail), detail
    assert "every word counted exactly 1..n" in detail
    assert "job finished" in detail
