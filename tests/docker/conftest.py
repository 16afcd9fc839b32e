"""Docker tests: the images (``scripts/docker-smoke.sh``) and a fresh machine
(``scripts/fresh-machine.sh``), each run once per module on a local Docker engine.

Whether Docker can run here is decided in one place, ``docker_gate`` (skip with the
reason, or fail under ``CJOB_REQUIRE_DOCKER=1`` as in CI); ``docker_harness`` runs a
script and reads its report. Both are in ``tests/support/docker_testing``.
"""
