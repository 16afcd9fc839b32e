"""Can the Docker tests run here? The one decision every module in ``tests/docker`` uses.

:func:`decide` is a pure function of :class:`Facts` that :func:`probe` gathers (the
environment, the effective user and capabilities, which binaries exist, whether an
engine answers). The rules, first match wins:

1. a script already reported that dockerd did not start (``start_failure``, its
   ``engine`` step's detail): Docker cannot run here, for that reason;
2. ``CJOB_SKIP_DOCKER_TESTS=1`` (a developer's opt-out) skips, unless
   ``CJOB_REQUIRE_DOCKER=1``;
3. an engine answers: run;
4. the scripts can start one: root, ``dockerd`` or ``apt-get`` (to install docker.io),
   and ``CAP_SYS_ADMIN`` in the effective capabilities (an unprivileged container
   lacks it, and dockerd cannot start there): run;
5. otherwise Docker cannot run here.

"Cannot run" skips with one sentence saying why and how to run the tests, or fails
with that sentence when ``CJOB_REQUIRE_DOCKER=1`` (CI sets it in ``.ci/run``).

>>> facts = Facts(env={}, euid=1000, cap_eff=0, binaries=frozenset(), engine_answers=True)
>>> decide(facts).verdict
<Verdict.RUN: 'run'>
"""

from __future__ import annotations

import dataclasses
import enum
import os
import pathlib
import shutil
import subprocess
from collections.abc import Mapping

CAP_SYS_ADMIN = 21
REQUIRE = "CJOB_REQUIRE_DOCKER"
OPT_OUT = "CJOB_SKIP_DOCKER_TESTS"
HOW = (
    "run them where a Docker engine answers, or as root with apt-get on a machine or in a "
    "privileged container"
)


class Verdict(enum.Enum):
    RUN = "run"
    SKIP = "skip"
    FAIL = "fail"


@dataclasses.dataclass(frozen=True, slots=True)
class Facts:
    env: Mapping[str, str]
    euid: int | None  # None where there is no os.geteuid
    cap_eff: int | None  # CapEff of /proc/self/status; None when unknown
    binaries: frozenset[str]  # which of dockerd and apt-get are on PATH
    engine_answers: bool
    start_failure: str | None = None  # a script's sentence saying why dockerd did not start


@dataclasses.dataclass(frozen=True, slots=True)
class Decision:
    verdict: Verdict
    reason: str = ""


def decide(facts: Facts) -> Decision:
    """Run, skip or fail the Docker tests; see the module docstring for the rules."""
    required = facts.env.get(REQUIRE) == "1"
    if facts.start_failure is not None:
        return _cannot_run(required, facts.start_failure)
    if facts.env.get(OPT_OUT) == "1" and not required:
        return Decision(
            Verdict.SKIP,
            f"Docker tests skipped: {OPT_OUT}=1 asks for it "
            f"(a developer's opt-out, overridden by {REQUIRE}=1).",
        )
    if facts.engine_answers:
        return Decision(Verdict.RUN)
    why = _why_no_engine_can_start(facts)
    return Decision(Verdict.RUN) if why is None else _cannot_run(required, why)


def _why_no_engine_can_start(facts: Facts) -> str | None:
    if facts.euid != 0:
        return "no Docker engine answers and only root can start dockerd"
    if not facts.binaries & {"dockerd", "apt-get"}:
        return "no Docker engine answers, and neither dockerd nor apt-get (for docker.io) is here"
    if facts.cap_eff is not None and not facts.cap_eff >> CAP_SYS_ADMIN & 1:
        return (
            "no Docker engine answers, and this is an unprivileged container "
            "(no CAP_SYS_ADMIN in CapEff), where dockerd cannot start"
        )
    return None


def _cannot_run(required: bool, why: str) -> Decision:
    if required:
        return Decision(Verdict.FAIL, f"Docker tests required ({REQUIRE}=1) but {why}; {HOW}.")
    return Decision(
        Verdict.SKIP, f"Docker tests skipped: {why}; {HOW} ({REQUIRE}=1 makes this a failure)."
    )


def probe(start_failure: str | None = None) -> Facts:
    """The facts of this process and machine (runs ``docker info`` when a client exists)."""
    return Facts(
        env=dict(os.environ),
        euid=os.geteuid() if hasattr(os, "geteuid") else None,
        cap_eff=_cap_eff(pathlib.Path("/proc/self/status")),
        binaries=frozenset(b for b in ("dockerd", "apt-get") if shutil.which(b)),
        engine_answers=_engine_answers(),
        start_failure=start_failure,
    )


def _cap_eff(status: pathlib.Path) -> int | None:
    try:
        text = status.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key == "CapEff":
            return int(value.strip(), 16)
    return None


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
