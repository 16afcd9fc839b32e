"""Runs one of the Docker step scripts (``scripts/docker-smoke.sh``,
``scripts/fresh-machine.sh``) for a test module and hands its JSON report back.

Before anything runs, :mod:`docker_gate` decides whether Docker can run here (skip, or
fail under ``CJOB_REQUIRE_DOCKER=1``); a script that reports its ``engine`` step failed
(dockerd did not start) goes through the same decision with that reason. Any other
stop of a script (its ``fatal`` step, or no report at all) fails the module's tests.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from docker_testing import docker_gate

ROOT = pathlib.Path(__file__).resolve().parents[3]

Report = dict[str, dict[str, Any]]


@dataclasses.dataclass(frozen=True, slots=True)
class ScriptRun:
    exit_code: int
    steps: Report
    log: pathlib.Path  # the script's own output

    def step(self, name: str) -> dict[str, Any]:
        """The report entry of a step that must have passed."""
        assert name in self.steps, f"the script did not get to {name!r}; see {self.log}"
        entry = self.steps[name]
        assert entry["ok"], f"{name} failed: {entry['detail']} (see {self.log})"
        return entry

    def failed(self) -> dict[str, str]:
        return {name: entry["detail"] for name, entry in self.steps.items() if not entry["ok"]}


def require_docker(start_failure: str | None = None) -> None:
    """Skip or fail the calling test unless Docker can run here (see :mod:`docker_gate`)."""
    decision = docker_gate.decide(docker_gate.probe(start_failure))
    if decision.verdict is docker_gate.Verdict.SKIP:
        pytest.skip(decision.reason)
    if decision.verdict is docker_gate.Verdict.FAIL:
        pytest.fail(decision.reason, pytrace=False)


def run_script(
    script: str,
    workdir: pathlib.Path,
    *,
    env: Mapping[str, str],
    args: Sequence[str] = (),
    timeout: float,
) -> ScriptRun:
    """``bash scripts/SCRIPT --report WORKDIR/report.json ARGS`` with ``env`` added."""
    require_docker()
    workdir.mkdir(parents=True, exist_ok=True)
    report_file = workdir / "report.json"
    report_file.unlink(missing_ok=True)
    log = workdir / f"{pathlib.Path(script).stem}.log"
    exit_code = _run(
        ["bash", str(ROOT / "scripts" / script), "--report", str(report_file), *args],
        {**os.environ, **env},
        log,
        timeout,
    )
    if not report_file.exists():
        tail = "".join(log.read_text().splitlines(keepends=True)[-30:])
        pytest.fail(f"scripts/{script} wrote no report (exit {exit_code}):\n{tail}")
    steps: Report = json.loads(report_file.read_text())
    engine = steps.get("engine")
    if engine is not None and not engine["ok"]:
        require_docker(start_failure=engine["detail"])
    if "fatal" in steps:
        pytest.fail(f"scripts/{script} stopped: {steps['fatal']['detail']} (log: {log})")
    return ScriptRun(exit_code, steps, log)


def _run(command: list[str], env: dict[str, str], log: pathlib.Path, timeout: float) -> int:
    with log.open("w") as out:
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()  # the script's exit trap removes containers and stops its dockerd
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            pytest.fail(f"{command[1]} ran over {timeout:.0f} s; see {log}")
