"""The operator's RBAC is the chart's, and every rule of it is needed.

The harness already runs the operator with the chart's ServiceAccount (a TokenRequest
token) bound to the ClusterRoles ``helm template`` renders, so every other test of this
folder shows them sufficient. Here each rule of the operator's ClusterRoles is taken
away in turn (one at a time, the others kept); the operator is restarted and a job is
driven through its life (created, its driver running, deleted). The operator must then
fail with a clear reason: the API server's 403 naming the verb and the resource
(``cannot <verb> resource "<resource>"``) in its log (for the objects it creates for a
job, configmaps and secrets, also in a Warning Event on the job; the other 403s are in
the log only); and the job's life must stop short. Two
rules are the exceptions, each asserted as it is: without ``events/create`` jobs run but
post no Event (:data:`EVENTS`); without the CRD discovery rule nothing a user sees
changes (:data:`POSSIBLY_UNNEEDED`, reported, kept in the chart).
"""

from __future__ import annotations

import contextlib
import copy
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from cjob_operator_testing import envtest
from cjob_operator_testing.harness import OperatorHarness, chart_rbac
from cjob_operator_testing.steps import Manifest

NS = "jobs"
ROLES = ("operator", "operator-discovery")
"""The ``checkpointed.dev/rbac`` labels of the operator's ClusterRoles."""
DEADLINE = 45.0
GRACE = 8.0
"""Seconds the job is driven on after the first 403: long enough to see it stuck."""
EVENTS = "operator:events:create"
"""Without it jobs still run, but ``kubectl describe`` shows none of the operator's Events
(each attempt is a 403 in its log): needed for what users see, not for the job."""
POSSIBLY_UNNEEDED = {
    "operator-discovery:customresourcedefinitions:list+watch": (
        "kopf logs the 403 and works on (cluster-wide mode): it would only miss a CRD"
        " installed, changed or removed after it started"
    )
}
"""Rules whose removal leaves everything a user sees working (only a 403 in the log)."""
MERGE = "application/merge-patch+json"


def _roles(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        d["metadata"]["labels"]["checkpointed.dev/rbac"]: d
        for d in docs
        if d["kind"] == "ClusterRole"
        and d["metadata"].get("labels", {}).get("checkpointed.dev/rbac") in ROLES
    }


def _rules() -> list[tuple[str, int, dict[str, Any]]]:
    roles = _roles(chart_rbac(NS))
    assert set(roles) == set(ROLES), "the chart's operator ClusterRoles changed"
    return [(label, i, rule) for label in ROLES for i, rule in enumerate(roles[label]["rules"])]


RULES = _rules()


def _rule_id(item: tuple[str, int, dict[str, Any]]) -> str:
    label, _, rule = item
    return f"{label}:{'+'.join(rule['resources'])}:{'+'.join(rule['verbs'])}"


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorHarness]:
    with OperatorHarness(tmp_path_factory.mktemp("rbac"), namespace=NS) as h:
        yield h


@pytest.fixture(autouse=True)
def delete_jobs_afterwards() -> None:
    """Each case cleans up its own job (the operator may not be able to)."""


def _forbidden(text: str, rule: dict[str, Any]) -> re.Match[str] | None:
    verbs = "|".join(rule["verbs"])
    resources = "|".join(re.escape(r) for r in rule["resources"])
    return re.search(rf'cannot ({verbs}) resource \\?"({resources})\\?"', text)


def _drive(
    h: OperatorHarness, manifest: Manifest, name: str, rule: dict[str, Any], since: int
) -> tuple[str, bool]:
    """Take the job through its life (created, driver running, deleted) as far as the
    operator gets within :data:`DEADLINE`, and a little past the first 403 it logs;
    returns the operator's log from ``since`` and whether the whole life went through."""
    created = deleted = False
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if _forbidden(h.operator_log()[since:], rule):
            deadline = min(deadline, time.monotonic() + GRACE)
        if not created:
            h.create_job(manifest(name))
            created = True
        pod = h.pod(name)
        if pod is not None and pod["status"].get("phase") == "Pending":
            h.set_pod_phase(name, "Running")
        if h.job_status(name).get("phase") == "Running" and not deleted:
            time.sleep(1.0)  # a few reconciles of a running job: its driver is read
            h.delete_job(name)
            deleted = True
        if deleted and h.job(name) is None:
            time.sleep(1.0)  # give late calls a moment
            return h.operator_log()[since:], True
        time.sleep(0.2)
    return h.operator_log()[since:], False


def _cleanup(h: OperatorHarness, name: str) -> None:
    """As the admin: the job's finalizer away and the job deleted (the collector takes
    what it owned)."""
    if h.job(name) is not None:
        h.http("PATCH", h.jobs_path(name), {"metadata": {"finalizers": None}}, MERGE)
        h.http("DELETE", h.jobs_path(name))
    h.wait_for(lambda: h.job(name) is None, f"{name} gone")


@pytest.mark.parametrize("item", RULES, ids=_rule_id)
def test_without_any_one_rule_the_operator_fails_with_the_forbidden_call_named(
    harness: OperatorHarness, manifest: Manifest, item: tuple[str, int, dict[str, Any]]
) -> None:
    h = harness
    label, index, rule = item
    full = _roles(h.rbac_docs)[label]
    reduced = copy.deepcopy(full)
    del reduced["rules"][index]
    name = f"rbac-{RULES.index(item)}"
    envtest.apply(h.plane, [reduced])
    try:
        h.stop_operator()
        since = len(h.operator_log())
        with contextlib.suppress(AssertionError):  # not ready, or exited: the log says why
            h.restart_operator()
        log, completed = _drive(h, manifest, name, rule, since)
    finally:
        envtest.apply(h.plane, [full])
        _cleanup(h, name)
    match = _forbidden(log, rule)
    assert match is not None, f"without {rule} the operator named no forbidden call"
    verb, resource = match.groups()
    shown = [
        e["message"]
        for e in h.events(name)
        if e["type"] == "Warning" and f'cannot {verb} resource "{resource}"' in e["message"]
    ]
    print(
        f"{_rule_id(item)}: forbidden {verb} {resource}; in a Warning Event: {bool(shown)};"
        f" job's life completed anyway: {completed}"
    )
    if _rule_id(item) == EVENTS:
        assert completed and not h.events(name), "without events/create no Event is posted"
    elif _rule_id(item) in POSSIBLY_UNNEEDED:
        assert completed, POSSIBLY_UNNEEDED[_rule_id(item)]
    else:
        assert not completed, f"without {rule} a job went through its life"
