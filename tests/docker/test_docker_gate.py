"""The decision whether the Docker tests run, skip or fail, as a table of situations.

``docker_gate.decide`` is pure: these tests need no Docker and always run.
"""

from __future__ import annotations

import dataclasses
import pathlib

import pytest
from docker_testing import docker_gate
from docker_testing.docker_gate import Facts, Verdict

ALL_CAPS = 0x1FFFFFFFFFF
DEFAULT_CONTAINER_CAPS = 0xA80425FB  # Docker's default set: no CAP_SYS_ADMIN
ROOT_WITH_APT = Facts(
    env={}, euid=0, cap_eff=ALL_CAPS, binaries=frozenset({"apt-get"}), engine_answers=False
)


def _with(facts: Facts, **changes: object) -> Facts:
    return dataclasses.replace(facts, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("facts", "verdict"),
    [
        pytest.param(
            Facts(env={}, euid=1000, cap_eff=0, binaries=frozenset(), engine_answers=True),
            Verdict.RUN,
            id="an engine answers",
        ),
        pytest.param(ROOT_WITH_APT, Verdict.RUN, id="root with apt-get can start one"),
        pytest.param(
            _with(ROOT_WITH_APT, binaries=frozenset({"dockerd"})),
            Verdict.RUN,
            id="root with dockerd can start one",
        ),
        pytest.param(
            _with(ROOT_WITH_APT, cap_eff=None), Verdict.RUN, id="capabilities unknown: try"
        ),
        pytest.param(
            _with(ROOT_WITH_APT, cap_eff=DEFAULT_CONTAINER_CAPS),
            Verdict.SKIP,
            id="unprivileged container",
        ),
        pytest.param(_with(ROOT_WITH_APT, euid=1000), Verdict.SKIP, id="not root"),
        pytest.param(
            _with(ROOT_WITH_APT, binaries=frozenset()), Verdict.SKIP, id="no apt-get, no dockerd"
        ),
        pytest.param(
            _with(ROOT_WITH_APT, start_failure="failed to mount overlay"),
            Verdict.SKIP,
            id="dockerd did not start",
        ),
    ],
)
def test_verdict(facts: Facts, verdict: Verdict) -> None:
    assert docker_gate.decide(facts).verdict is verdict


def test_an_unprivileged_container_skips_with_one_sentence_saying_why_and_how() -> None:
    facts = _with(ROOT_WITH_APT, cap_eff=DEFAULT_CONTAINER_CAPS)
    reason = docker_gate.decide(facts).reason
    assert reason == (
        "Docker tests skipped: no Docker engine answers, and this is an unprivileged "
        "container (no CAP_SYS_ADMIN in CapEff), where dockerd cannot start; run them where "
        "a Docker engine answers, or as root with apt-get on a machine or in a privileged "
        "container (CJOB_REQUIRE_DOCKER=1 makes this a failure)."
    )


@pytest.mark.parametrize(
    "facts",
    [
        pytest.param(_with(ROOT_WITH_APT, cap_eff=DEFAULT_CONTAINER_CAPS), id="unprivileged"),
        pytest.param(_with(ROOT_WITH_APT, euid=1000), id="not root"),
        pytest.param(_with(ROOT_WITH_APT, start_failure="no cgroups"), id="dockerd failed"),
    ],
)
def test_required_docker_fails_with_the_same_reason_instead_of_skipping(facts: Facts) -> None:
    skipped = docker_gate.decide(facts)
    failed = docker_gate.decide(_with(facts, env={"CJOB_REQUIRE_DOCKER": "1"}))
    assert (skipped.verdict, failed.verdict) == (Verdict.SKIP, Verdict.FAIL)
    why = skipped.reason.removeprefix("Docker tests skipped: ").split(";")[0]
    assert failed.reason.startswith(f"Docker tests required (CJOB_REQUIRE_DOCKER=1) but {why};")


def test_a_failed_start_skips_with_the_scripts_reason() -> None:
    why = "dockerd did not start here (storage drivers vfs): level=fatal msg=no cgroups"
    facts = _with(ROOT_WITH_APT, engine_answers=True, start_failure=why)
    decision = docker_gate.decide(facts)
    assert decision.verdict is Verdict.SKIP
    assert decision.reason.startswith(f"Docker tests skipped: {why}; run them where")


def test_the_opt_out_skips_even_where_docker_runs() -> None:
    facts = _with(ROOT_WITH_APT, env={"CJOB_SKIP_DOCKER_TESTS": "1"}, engine_answers=True)
    decision = docker_gate.decide(facts)
    assert decision.verdict is Verdict.SKIP
    assert "CJOB_SKIP_DOCKER_TESTS=1" in decision.reason


def test_required_docker_overrides_the_opt_out() -> None:
    env = {"CJOB_SKIP_DOCKER_TESTS": "1", "CJOB_REQUIRE_DOCKER": "1"}
    assert docker_gate.decide(_with(ROOT_WITH_APT, env=env)).verdict is Verdict.RUN
    unprivileged = _with(ROOT_WITH_APT, env=env, cap_eff=DEFAULT_CONTAINER_CAPS)
    assert docker_gate.decide(unprivileged).verdict is Verdict.FAIL


@pytest.mark.parametrize(("value", "verdict"), [("0", Verdict.SKIP), ("", Verdict.SKIP)])
def test_only_1_requires_docker(value: str, verdict: Verdict) -> None:
    facts = _with(ROOT_WITH_APT, env={"CJOB_REQUIRE_DOCKER": value}, euid=1000)
    assert docker_gate.decide(facts).verdict is verdict


def test_cap_eff_is_read_from_proc_status(tmp_path: pathlib.Path) -> None:
    status = tmp_path / "status"
    status.write_text("Name:\tpython\nCapPrm:\t0000000000000000\nCapEff:\t00000000a80425fb\n")
    assert docker_gate._cap_eff(status) == DEFAULT_CONTAINER_CAPS
    assert docker_gate._cap_eff(tmp_path / "missing") is None
