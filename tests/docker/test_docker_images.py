"""The Dockerfile's two images, built with a local Docker engine and smoke-tested.

``scripts/docker-smoke.sh`` does the work once per module (installing docker.io and
starting dockerd when needed, making the debootstrap base image, building both
targets, running the smoke tests in locked-down containers) and writes a report; each
test here asserts one line of it, so a failure names the step and its evidence.

Whether Docker can run here is ``docker_gate``'s decision, shared with the
fresh-machine test: where it cannot (no engine answers and none can be started: not
root, no apt-get or dockerd, or an unprivileged container), the tests skip with the
reason, or fail when ``CJOB_REQUIRE_DOCKER=1`` (CI). A cold machine needs about 3
minutes (most of it downloading Debian and PyPI packages); with the engine's layer
cache, under a minute. Logs and the report stay in ``build/docker-smoke/``.
"""

from __future__ import annotations

import json

import pytest
from docker_testing import docker_harness

WORKDIR = docker_harness.ROOT / "build" / "docker-smoke"
SCRIPT_TIMEOUT = 1800

# A cold build downloads Debian and PyPI packages: allow for it (tests, not benchmarks).
pytestmark = pytest.mark.timeout(SCRIPT_TIMEOUT + 120)


@pytest.fixture(scope="module")
def smoke() -> docker_harness.ScriptRun:
    return docker_harness.run_script(
        "docker-smoke.sh",
        WORKDIR,
        env={"CJOB_DOCKER_WORKDIR": str(WORKDIR)},
        timeout=SCRIPT_TIMEOUT,
    )


def test_smoke_script_passes(smoke: docker_harness.ScriptRun) -> None:
    assert (smoke.exit_code, smoke.failed()) == (0, {}), f"see {smoke.log}"


@pytest.mark.parametrize("target", ["operator", "runtime"])
def test_image_target_builds(smoke: docker_harness.ScriptRun, target: str) -> None:
    step = smoke.step(f"build_{target}")
    assert f"cjob-{target}:" in step["detail"]


@pytest.mark.parametrize("image", ["cjob-operator", "cjob-runtime"])
def test_image_runs_as_uid_10001_without_build_tools(
    smoke: docker_harness.ScriptRun, image: str
) -> None:
    step = smoke.step(f"hygiene_{image}")
    assert "user=10001:10001" in step["detail"]


@pytest.mark.parametrize("image", ["cjob-operator", "cjob-runtime"])
def test_image_ships_no_test_or_benchmark_scaffolding(
    smoke: docker_harness.ScriptRun, image: str
) -> None:
    """The installed package files hold no ``cjob_operator/testing``, no probe, no fakes.

    ``scripts/docker-smoke.sh`` lists the files of the installed distribution (its
    RECORD) inside the image and asks the import system for ``cjob_operator.testing``.
    """
    detail = smoke.step(f"shipped_files_{image}")["detail"]
    fields = dict(
        item.split("=", 1) for item in detail.replace(" importable", "_importable").split()
    )
    assert int(fields["cjob_operator_modules"]) > 0, detail  # the listing is real
    assert fields["scaffolding"] == "none", detail
    assert fields["cjob_operator.testing_importable"] == "no", detail


def test_runtime_image_cjob_help(smoke: docker_harness.ScriptRun) -> None:
    assert smoke.step("runtime_help")["detail"].startswith("usage: cjob")


def test_runtime_image_runs_a_checkpointed_job_read_only_as_non_root(
    smoke: docker_harness.ScriptRun,
) -> None:
    """``cjob demo`` with a crash: restored from a checkpoint, nothing lost or duplicated."""
    smoke.step("runtime_demo")
    summary = json.loads((WORKDIR / "runtime-demo.json").read_text())
    assert summary["exactly_once"] is True, summary
    assert (summary["lost"], summary["duplicated"], summary["out_of_order"]) == (0, 0, 0)
    assert summary["restarts"] >= 1, summary
    assert summary["checkpoints_completed"] >= 1, summary


def test_runtime_image_runs_spark_read_only(smoke: docker_harness.ScriptRun) -> None:
    assert smoke.step("runtime_spark")["detail"].endswith("sum 4950")


def test_runtime_image_starts_a_spark_executor(smoke: docker_harness.ScriptRun) -> None:
    """The ``executor`` argument Spark on Kubernetes passes reaches the executor backend."""
    assert "Failed to connect to" in smoke.step("runtime_executor")["detail"]


def test_operator_image_fails_clearly_without_a_cluster(smoke: docker_harness.ScriptRun) -> None:
    """No Kubernetes API: one clear error line and a non-zero exit (CrashLoopBackOff, not a hang)."""
    detail = smoke.step("operator_no_cluster")["detail"]
    assert "no Kubernetes API to manage" in detail
    assert "exit code 1" in detail
