"""Helpers for the tests that need a Docker engine (``tests/docker``, the local Kubernetes).

- :mod:`.docker_gate` — whether Docker can run here, decided in one place (skip with the
  reason, or fail under ``CJOB_REQUIRE_DOCKER=1`` as in CI).
- :mod:`.docker_harness` — runs a Docker script (``scripts/docker-smoke.sh``,
  ``scripts/fresh-machine.sh``) and reads its report.
"""
