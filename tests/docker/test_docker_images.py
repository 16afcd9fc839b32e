"""The Dockerfile's two images, built with a local Docker engine and smoke-tested.

``scripts/docker-smoke.sh`` does the work once per session (installing docker.io and
starting dockerd when needed, making the debootstrap base image, building both
targets, running the smoke tests in locked-down containers) and writes a report; each
test here asserts one line of it, so a failure names the step and its evidence.

These tests run wherever Docker can: an engine answers, or we are root with apt-get
(CI is). They skip only where neither holds, or when ``CJOB_SKIP_DOCKER_TESTS=1``
asks for it on a developer's machine (never in CI, where ``CI`` is set). A cold machine needs about 3 minutes (most of
it downloading Debian and PyPI packages); with the engine's layer cache, under a
minute. Logs and the report stay in ``build/docker-smoke/``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import shutil
import subprocess
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "docker-smoke.sh"
WORKDIR = ROOT / "build" / "docker-smoke"
SCRIPT_TIMEOUT = 1800

# A cold build downloads Debian and PyPI packages: allow for it (tests, not benchmarks).
pytestmark = pytest.mark.timeout(SCRIPT_TIMEOUT + 120)

Report = dict[str, dict[str, Any]]


def _engine_answers() -> bool:
    for client in ("/usr/bin/docker", shutil.which("docker")):
        if client and os.access(client, os.X_OK):
            try:
                done = subprocess.run(
                    [client, "info"], capture_output=True, timeout=30, check=False
                )
            except (OSError, subprocess.TimeoutExpired):
                continue
            if done.returncode == 0:
                return True
    return False


def _why_docker_cannot_run() -> str | None:
    if os.environ.get("CJOB_SKIP_DOCKER_TESTS") == "1" and not os.environ.get("CI"):
        return "CJOB_SKIP_DOCKER_TESTS=1 asks to skip the Docker image tests (ignored in CI)"
    if _engine_answers():
        return None
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    if root and (shutil.which("dockerd") or shutil.which("apt-get")):
        return None
    return (
        "Docker cannot run here: no engine answers, and installing or starting one "
        "(scripts/docker-smoke.sh) needs root and apt-get"
    )


@dataclasses.dataclass(frozen=True, slots=True)
class SmokeRun:
    exit_code: int
    steps: Report


def _run_script(report_file: pathlib.Path, log: pathlib.Path) -> int:
    env = {**os.environ, "CJOB_DOCKER_WORKDIR": str(WORKDIR)}
    with log.open("w") as out:
        proc = subprocess.Popen(
            ["bash", str(SCRIPT), "--report", str(report_file)],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            return proc.wait(timeout=SCRIPT_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.terminate()  # the script's exit trap stops the dockerd it started
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            pytest.fail(f"scripts/docker-smoke.sh ran over {SCRIPT_TIMEOUT} s; see {log}")


@pytest.fixture(scope="module")
def smoke() -> SmokeRun:
    reason = _why_docker_cannot_run()
    if reason is not None:
        pytest.skip(reason)
    WORKDIR.mkdir(parents=True, exist_ok=True)
    report_file = WORKDIR / "report.json"
    report_file.unlink(missing_ok=True)
    log = WORKDIR / "smoke.log"
    exit_code = _run_script(report_file, log)
    if not report_file.exists():
        tail = "".join(log.read_text().splitlines(keepends=True)[-30:])
        pytest.fail(f"scripts/docker-smoke.sh wrote no report (exit {exit_code}):\n{tail}")
    steps: Report = json.loads(report_file.read_text())
    if "fatal" in steps:
        pytest.fail(f"scripts/docker-smoke.sh stopped: {steps['fatal']['detail']} (log: {log})")
    return SmokeRun(exit_code, steps)


@pytest.fixture(scope="module")
def report(smoke: SmokeRun) -> Report:
    return smoke.steps


def _step(report: Report, name: str) -> dict[str, Any]:
    assert name in report, f"the smoke script did not get to {name!r}; see {WORKDIR}/smoke.log"
    step = report[name]
    assert step["ok"], f"{name} failed: {step['detail']}"
    return step


def test_smoke_script_passes(smoke: SmokeRun) -> None:
    failed = {name: step["detail"] for name, step in smoke.steps.items() if not step["ok"]}
    assert (smoke.exit_code, failed) == (0, {}), f"see {WORKDIR}/smoke.log"


@pytest.mark.parametrize("target", ["operator", "runtime"])
def test_image_target_builds(report: Report, target: str) -> None:
    step = _step(report, f"build_{target}")
    assert f"cjob-{target}:" in step["detail"]


@pytest.mark.parametrize("image", ["cjob-operator", "cjob-runtime"])
def test_image_runs_as_uid_10001_without_build_tools(report: Report, image: str) -> None:
    step = _step(report, f"hygiene_{image}")
    assert "user=10001:10001" in step["detail"]


def test_runtime_image_cjob_help(report: Report) -> None:
    assert _step(report, "runtime_help")["detail"].startswith("usage: cjob")


def test_runtime_image_runs_a_checkpointed_job_read_only_as_non_root(report: Report) -> None:
    """``cjob demo`` with a crash: restored from a checkpoint, nothing lost or duplicated."""
    _step(report, "runtime_demo")
    summary = json.loads((WORKDIR / "runtime-demo.json").read_text())
    assert summary["exactly_once"] is True, summary
    assert (summary["lost"], summary["duplicated"], summary["out_of_order"]) == (0, 0, 0)
    assert summary["restarts"] >= 1, summary
    assert summary["checkpoints_completed"] >= 1, summary


def test_runtime_image_runs_spark_read_only(report: Report) -> None:
    assert _step(report, "runtime_spark")["detail"].endswith("sum 4950")


def test_runtime_image_starts_a_spark_executor(report: Report) -> None:
    """The ``executor`` argument Spark on Kubernetes passes reaches the executor backend."""
    assert "Failed to connect to" in _step(report, "runtime_executor")["detail"]


def test_operator_image_fails_clearly_without_a_cluster(report: Report) -> None:
    """No Kubernetes API: one clear error line and a non-zero exit (CrashLoopBackOff, not a hang)."""
    detail = _step(report, "operator_no_cluster")["detail"]
    assert "no Kubernetes API to manage" in detail
    assert "exit code 1" in detail
