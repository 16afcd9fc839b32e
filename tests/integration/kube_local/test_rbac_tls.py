"""Authentication by token, RBAC authorization with the real 403 message, and TLS."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import kubernetes as _kubernetes
import pytest
import urllib3
from kube_local import pki
from kubernetes.client.exceptions import ApiException
from tests.integration.kube_local.conftest import Kube

kubernetes: Any = _kubernetes  # its partial annotations are not worth fighting in tests

RBAC = "rbac.authorization.k8s.io"
POD = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}


def _token(core: Any, ns: str, sa: str) -> str:
    core.create_namespaced_service_account(ns, {"metadata": {"name": sa}})
    request = core.create_namespaced_service_account_token(sa, ns, {"spec": {}})
    token: str = request.status.token
    return token


def _refused(call: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(ApiException) as refused:
        call(*args, **kwargs)
    assert refused.value.status == 403
    message: str = json.loads(str(refused.value.body))["message"]
    return message


def test_a_service_account_without_bindings_is_forbidden(kube: Kube, core: Any, ns: str) -> None:
    token = _token(core, ns, "nobody")
    as_sa = kubernetes.client.CoreV1Api(kube.client(token))
    assert _refused(as_sa.create_namespaced_pod, ns, POD) == (
        f'pods is forbidden: User "system:serviceaccount:{ns}:nobody" cannot create '
        f'resource "pods" in API group "" in the namespace "{ns}"'
    )
    assert _refused(as_sa.read_namespaced_pod, "p", ns) == (
        f'pods "p" is forbidden: User "system:serviceaccount:{ns}:nobody" cannot get '
        f'resource "pods" in API group "" in the namespace "{ns}"'
    )
    assert _refused(as_sa.list_namespace) == (
        f'namespaces is forbidden: User "system:serviceaccount:{ns}:nobody" cannot list '
        f'resource "namespaces" in API group "" at the cluster scope'
    )
    result = kube.kubectl("-n", ns, "get", "pods", token=token, check=False)
    assert result.returncode != 0
    assert (
        f"Error from server (Forbidden): pods is forbidden: User "
        f'"system:serviceaccount:{ns}:nobody" cannot list resource "pods"'
    ) in result.stderr


def test_a_role_binding_grants_exactly_its_verbs_and_names(kube: Kube, core: Any, ns: str) -> None:
    rbac = kubernetes.client.RbacAuthorizationV1Api(kube.client())
    token = _token(core, ns, "worker")
    rbac.create_namespaced_role(
        ns,
        {
            "metadata": {"name": "pods"},
            "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "get", "list"]},
                {
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "verbs": ["get"],
                    "resourceNames": ["allowed"],
                },
            ],
        },
    )
    rbac.create_namespaced_role_binding(
        ns,
        {
            "metadata": {"name": "worker-pods"},
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "pods"},
            "subjects": [{"kind": "ServiceAccount", "name": "worker", "namespace": ns}],
        },
    )
    for name in ("allowed", "other"):
        core.create_namespaced_config_map(ns, {"metadata": {"name": name}})
    as_sa = kubernetes.client.CoreV1Api(kube.client(token))
    as_sa.create_namespaced_pod(ns, POD)
    assert [p.metadata.name for p in as_sa.list_namespaced_pod(ns).items] == ["p"]
    assert "cannot delete resource" in _refused(as_sa.delete_namespaced_pod, "p", ns)
    assert as_sa.read_namespaced_config_map("allowed", ns).metadata.name == "allowed"
    assert 'configmaps "other" is forbidden' in _refused(
        as_sa.read_namespaced_config_map, "other", ns
    )
    assert 'cannot patch resource "pods/status"' in _refused(
        as_sa.patch_namespaced_pod_status, "p", ns, {"status": {"phase": "Running"}}
    )
    assert kube.kubectl("-n", ns, "get", "pods", token=token).stdout.startswith("NAME")


def test_kubectl_auth_can_i_answers_from_rbac(kube: Kube, core: Any, ns: str) -> None:
    rbac = kubernetes.client.RbacAuthorizationV1Api(kube.client())
    token = _token(core, ns, "asker")
    rbac.create_namespaced_role(
        ns,
        {
            "metadata": {"name": "watch-pods"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["watch"]}],
        },
    )
    rbac.create_namespaced_role_binding(
        ns,
        {
            "metadata": {"name": "asker"},
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "watch-pods"},
            "subjects": [{"kind": "ServiceAccount", "name": "asker", "namespace": ns}],
        },
    )

    def can(*args: str) -> str:
        return kube.kubectl(
            "-n", ns, "auth", "can-i", *args, token=token, check=False
        ).stdout.strip()

    assert can("watch", "pods") == "yes"
    assert can("create", "pods") == "no"
    assert can("watch", "pods", "-n", "default") == "no"


def test_a_cluster_role_through_a_cluster_role_binding(kube: Kube, core: Any, ns: str) -> None:
    rbac = kubernetes.client.RbacAuthorizationV1Api(kube.client())
    token = _token(core, ns, "reader")
    role = f"{ns}-reader"
    rbac.create_cluster_role(
        {
            "metadata": {"name": role},
            "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]}],
        }
    )
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": role},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}],
        }
    )
    as_sa = kubernetes.client.CoreV1Api(kube.client(token))
    assert ns in [n.metadata.name for n in as_sa.list_namespace().items]
    _refused(as_sa.list_namespaced_pod, ns)


def test_a_group_binding_and_a_token_secret(kube: Kube, core: Any, ns: str) -> None:
    rbac = kubernetes.client.RbacAuthorizationV1Api(kube.client())
    core.create_namespaced_service_account(ns, {"metadata": {"name": "legacy"}})
    core.create_namespaced_secret(
        ns,
        {
            "metadata": {
                "name": "legacy-token",
                "annotations": {"kubernetes.io/service-account.name": "legacy"},
            },
            "type": "kubernetes.io/service-account-token",
        },
    )
    data = core.read_namespaced_secret("legacy-token", ns).data
    assert base64.b64decode(data["ca.crt"]).decode() == kube.ca.read_text()
    token = base64.b64decode(data["token"]).decode()
    rbac.create_namespaced_role_binding(
        ns,
        {
            "metadata": {"name": "all-sas-admin"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "Group", "name": f"system:serviceaccounts:{ns}"}],
        },
    )
    as_sa = kubernetes.client.CoreV1Api(kube.client(token))
    assert as_sa.list_namespaced_secret(ns).items
    core.delete_namespaced_service_account("legacy", ns)
    with pytest.raises(ApiException) as unauthorized:
        as_sa.list_namespaced_secret(ns)
    assert unauthorized.value.status == 401


def test_an_unknown_token_is_401(kube: Kube) -> None:
    with pytest.raises(ApiException) as unauthorized:
        kubernetes.client.CoreV1Api(kube.client("not-a-token")).list_namespace()
    assert unauthorized.value.status == 401


def test_the_client_verifies_the_server_with_the_ca(kube: Kube) -> None:
    trusting = kubernetes.client.CoreV1Api(kube.client())
    assert trusting.read_namespace("default").metadata.name == "default"
    untrusting = kubernetes.client.CoreV1Api(kube.client(ca=False))
    with pytest.raises(urllib3.exceptions.MaxRetryError) as failed:
        untrusting.read_namespace("default", _request_timeout=5)
    assert "CERTIFICATE_VERIFY_FAILED" in str(failed.value)


def test_kubectl_with_another_ca_refuses_the_server(kube: Kube, tmp_path: Path) -> None:
    pki.ensure(tmp_path / "other")
    config = kube.kubeconfig.read_text().replace(str(kube.ca), str(tmp_path / "other/ca.crt"))
    (tmp_path / "kubeconfig").write_text(config)
    result = kube.kubectl("get", "ns", check=False, kubeconfig=tmp_path / "kubeconfig")
    assert result.returncode != 0
    assert "certificate signed by unknown authority" in result.stderr
