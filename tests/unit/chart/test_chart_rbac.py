"""RBAC: the rendered rules equal the table in docs/operations.md ("RBAC"), in every mode.

The table is parsed from the docs, so the docs and the chart cannot drift: a rule the
chart gains (or loses) fails here until the table says so and why. Independently of the
table: no wildcard anywhere, Secrets only for the operator and never listed or watched,
and every binding gives its role to the right ServiceAccount.
"""

from __future__ import annotations

from typing import Any

import pytest
from chart_testing import chartkit

from cjob_operator.act import kube

ROLE_LABEL = "checkpointed.dev/rbac"
RULE_KINDS = ("Role", "ClusterRole")
Grant = tuple[str, str, str, str]  # (role, apiGroup, resource, verb)


def _split(cell: str) -> list[str]:
    return [part.strip().strip("`") for part in cell.split(",") if part.strip()]


def documented() -> set[Grant]:
    section = chartkit.markdown_section(chartkit.OPERATIONS_DOC.read_text(), "RBAC")
    grants: set[Grant] = set()
    for row in chartkit.markdown_table(section):
        group = "" if row["API group"] == "core" else row["API group"]
        for resource in _split(row["resources"]):
            for verb in _split(row["verbs"]):
                grants.add((row["role"], group, resource, verb))
    return grants


def rendered(manifests: list[dict[str, Any]]) -> set[Grant]:
    grants: set[Grant] = set()
    for role in (m for m in manifests if m["kind"] in RULE_KINDS):
        name = role["metadata"]["labels"].get(ROLE_LABEL)
        assert name, f"{role['kind']} {role['metadata']['name']} has no {ROLE_LABEL} label"
        for rule in role["rules"]:
            assert not rule.get("resourceNames") and not rule.get("nonResourceURLs")
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        grants.add((name, group, resource, verb))
    return grants


def test_the_table_parses() -> None:
    grants = documented()
    roles = {g[0] for g in grants}
    assert roles == {"operator", "operator-discovery", "driver"}
    assert ("operator", "", "secrets", "get") in grants


@pytest.mark.parametrize("combo", sorted(chartkit.COMBOS))
def test_rendered_rules_are_documented(helm_bin: str, combo: str) -> None:
    extra = rendered(chartkit.render(chartkit.COMBOS[combo])) - documented()
    assert not extra, (
        f"rules not in docs/operations.md (RBAC): {sorted(extra)}; "
        "document each with its reason or remove it"
    )


def test_every_documented_rule_is_rendered_in_some_mode(helm_bin: str) -> None:
    seen: set[Grant] = set()
    for combo in chartkit.COMBOS.values():
        seen |= rendered(chartkit.render(combo))
    missing = documented() - seen
    assert not missing, f"documented but never rendered: {sorted(missing)}"


@pytest.mark.parametrize("combo", sorted(chartkit.COMBOS))
def test_no_wildcards_and_secrets_only_where_documented(helm_bin: str, combo: str) -> None:
    for role in (m for m in chartkit.render(chartkit.COMBOS[combo]) if m["kind"] in RULE_KINDS):
        for rule in role["rules"]:
            for key in ("apiGroups", "resources", "verbs"):
                assert not any("*" in item for item in rule[key]), (
                    f"{role['metadata']['name']}: wildcard in {key}: {rule}"
                )
            if "secrets" in rule["resources"]:
                assert role["metadata"]["labels"][ROLE_LABEL] == "operator", rule
                assert not {"list", "watch", "update", "patch", "deletecollection"} & set(
                    rule["verbs"]
                ), f"secrets must only be read by name: {rule}"


def test_the_operator_may_touch_every_kind_its_client_addresses(helm_bin: str) -> None:
    # act/kube.py maps these kinds to core resources; the operator must be allowed each.
    operator = {(g, r) for role, g, r, _ in rendered(chartkit.render()) if role == "operator"}
    for plural in kube._CORE_PLURALS.values():
        assert ("", plural) in operator, plural
    assert ("checkpointed.dev", "checkpointedjobs/status") in operator


def _bindings(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in manifests if m["kind"] in ("RoleBinding", "ClusterRoleBinding")]


@pytest.mark.parametrize("combo", sorted(chartkit.COMBOS))
def test_bindings_grant_each_role_to_its_service_account(helm_bin: str, combo: str) -> None:
    manifests = chartkit.render(chartkit.COMBOS[combo])
    roles = {
        (m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"]): m["metadata"]["labels"][
            ROLE_LABEL
        ]
        for m in manifests
        if m["kind"] in RULE_KINDS
    }
    operator_sa = f"{chartkit.RELEASE}-checkpointed-operator"
    for binding in _bindings(manifests):
        namespace = binding["metadata"].get("namespace")
        ref = binding["roleRef"]
        key = (ref["kind"], namespace if ref["kind"] == "Role" else None, ref["name"])
        assert key in roles, f"{binding['metadata']['name']} refers to a missing {key}"
        (subject,) = binding["subjects"]
        if roles[key] == "driver":
            assert subject == {
                "kind": "ServiceAccount",
                "name": "cjob-driver",
                "namespace": namespace,
            }
        else:
            assert subject == {
                "kind": "ServiceAccount",
                "name": operator_sa,
                "namespace": chartkit.NAMESPACE,
            }


def test_namespaced_mode_grants_nothing_namespaced_cluster_wide(helm_bin: str) -> None:
    manifests = chartkit.render(chartkit.COMBOS["namespaced"])
    cluster = [m for m in manifests if m["kind"] == "ClusterRole"]
    assert [m["metadata"]["labels"][ROLE_LABEL] for m in cluster] == ["operator-discovery"]
    operator_roles = sorted(
        m["metadata"]["namespace"]
        for m in manifests
        if m["kind"] == "Role" and m["metadata"]["labels"][ROLE_LABEL] == "operator"
    )
    assert operator_roles == ["team-a", "team-b"]


def test_without_discovery_there_is_no_cluster_role(helm_bin: str) -> None:
    kinds = {m["kind"] for m in chartkit.render(chartkit.COMBOS["no-discovery"])}
    assert not kinds & {"ClusterRole", "ClusterRoleBinding"}


def test_the_check_catches_a_wildcard_or_an_undocumented_rule() -> None:
    role = {
        "kind": "Role",
        "metadata": {"name": "x", "labels": {ROLE_LABEL: "driver"}},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
    }
    assert rendered([role]) - documented() == {("driver", "", "secrets", "get")}
