"""Real kubectl against kube-local: CRDs, apply, Tables with printer columns, patch, delete."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import kubernetes as _kubernetes
import pytest
import waiting
from tests.integration.kube_local.conftest import ROOT, Kube

kubernetes: Any = _kubernetes  # its partial annotations are not worth fighting in tests

CRD = ROOT / "crds" / "checkpointedjobs.checkpointed.dev.yaml"
MINIMAL = ROOT / "examples" / "manifests" / "minimal.yaml"


def _namespace(kube: Kube, name: str) -> None:
    kube.kubectl(
        "apply", "-f", "-", stdin=f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n"
    )


def test_a_crd_is_served_and_kubectl_get_prints_its_columns(kube: Kube) -> None:
    kube.kubectl("apply", "-f", str(CRD))
    waiting.wait_until(
        lambda: "checkpointedjobs" in kube.kubectl("api-resources").stdout,
        10,
        "the CRD in discovery",
    )
    _namespace(kube, "streaming")
    applied = kube.kubectl("-n", "streaming", "apply", "-f", str(MINIMAL))
    assert applied.stdout.strip() == "checkpointedjob.checkpointed.dev/running-count created"
    again = kube.kubectl("-n", "streaming", "apply", "-f", str(MINIMAL))
    assert again.stdout.strip() == "checkpointedjob.checkpointed.dev/running-count unchanged"
    custom = kubernetes.client.CustomObjectsApi(kube.client())
    custom.patch_namespaced_custom_object_status(
        "checkpointed.dev",
        "v1alpha1",
        "streaming",
        "checkpointedjobs",
        "running-count",
        {
            "status": {
                "phase": "Running",
                "restarts": {"count": 3},
                "checkpoints": {"lastCompleted": {"id": 7}},
            }
        },
    )
    header, row = kube.kubectl("-n", "streaming", "get", "cjob").stdout.splitlines()
    assert header.split() == [
        "NAME",
        "PHASE",
        "PARALLELISM",
        "LAST",
        "CHECKPOINT",
        "CHECKPOINT",
        "AGE",
        "RESTARTS",
        "AGE",
    ]
    cells = row.split()
    assert cells[:4] == ["running-count", "Running", "2", "7"]  # parallelism: the CRD default
    assert cells[4] == "3" and cells[5].endswith("s")


def test_apply_patch_and_delete_a_builtin(kube: Kube) -> None:
    _namespace(kube, "apply")
    manifest = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\n"
        '  labels: {{app: demo}}\ndata:\n  a: "{a}"\n  {extra}\n'
    )
    kube.kubectl("-n", "apply", "apply", "-f", "-", stdin=manifest.format(a=1, extra='b: "2"'))
    configured = kube.kubectl(
        "-n", "apply", "apply", "-f", "-", stdin=manifest.format(a=3, extra="")
    )
    assert configured.stdout.strip() == "configmap/conf configured"
    got: dict[str, Any] = json.loads(
        kube.kubectl("-n", "apply", "get", "cm", "conf", "-o", "json").stdout
    )
    assert got["data"] == {"a": "3"}  # b was removed: it was in the last applied config
    assert "kubectl.kubernetes.io/last-applied-configuration" in got["metadata"]["annotations"]
    kube.kubectl(
        "-n", "apply", "patch", "cm", "conf", "--type", "merge", "-p", '{"data": {"c": "4"}}'
    )
    kube.kubectl("-n", "apply", "label", "cm", "conf", "tier=back")
    listed = kube.kubectl("-n", "apply", "get", "cm", "-l", "tier=back", "-o", "name")
    assert listed.stdout.split() == ["configmap/conf"]
    kube.kubectl("-n", "apply", "delete", "cm", "conf")
    missing = kube.kubectl("-n", "apply", "get", "cm", "conf", check=False)
    assert 'configmaps "conf" not found' in missing.stderr


def test_server_side_apply_creates_then_merges(kube: Kube) -> None:
    _namespace(kube, "ssa")
    manifest = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s\ndata:\n  a: "{}"\n'
    for value in (1, 2):
        kube.kubectl("-n", "ssa", "apply", "--server-side", "-f", "-", stdin=manifest.format(value))
    got = json.loads(kube.kubectl("-n", "ssa", "get", "cm", "s", "-o", "json").stdout)
    assert got["data"] == {"a": "2"}


def test_kubectl_create_subcommands_send_protobuf_and_work(kube: Kube) -> None:
    kube.kubectl("create", "namespace", "typed")
    kube.kubectl("-n", "typed", "create", "configmap", "c", "--from-literal=a=b")
    kube.kubectl("-n", "typed", "create", "secret", "generic", "s", "--from-literal=x=y")
    kube.kubectl("-n", "typed", "create", "serviceaccount", "robot")
    token = kube.kubectl("-n", "typed", "create", "token", "robot").stdout.strip()
    got = json.loads(kube.kubectl("-n", "typed", "get", "cm", "c", "-o", "json").stdout)
    assert got["data"] == {"a": "b"}
    secret = json.loads(kube.kubectl("-n", "typed", "get", "secret", "s", "-o", "json").stdout)
    assert secret["data"] == {"x": "eQ=="}
    refused = kube.kubectl("-n", "typed", "get", "cm", token=token, check=False)
    assert (
        'User "system:serviceaccount:typed:robot" cannot list resource "configmaps"'
        in refused.stderr
    )
    dry = kube.kubectl("-n", "typed", "delete", "cm", "c", "--dry-run=server", check=False)
    assert "does not support dryRun" in dry.stderr
    kube.kubectl("-n", "typed", "delete", "cm", "c")


HELM = ROOT / ".venv" / "bin" / "helm"
CHART = ROOT / "charts" / "checkpointed-operator"


@pytest.mark.skipif(not HELM.exists(), reason="helm is installed by scripts/get-helm.sh")
def test_helm_install_upgrade_uninstall(kube: Kube) -> None:
    def helm(*args: str) -> str:
        result = subprocess.run(
            [str(HELM), "--kubeconfig", str(kube.kubeconfig), *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    helm("install", "cjob", str(CHART), "-n", "helm-test", "--create-namespace")
    deploy = json.loads(kube.kubectl("-n", "helm-test", "get", "deploy", "-o", "json").stdout)
    assert [d["metadata"]["name"] for d in deploy["items"]] == ["cjob-checkpointed-operator"]
    helm("upgrade", "cjob", str(CHART), "-n", "helm-test", "--set", "operator.reconcileInterval=7")
    releases = json.loads(helm("list", "-n", "helm-test", "-o", "json"))
    assert [(r["name"], r["revision"], r["status"]) for r in releases] == [
        ("cjob", "2", "deployed")
    ]
    env = json.loads(
        kube.kubectl(
            "-n", "helm-test", "get", "deploy", "cjob-checkpointed-operator", "-o", "json"
        ).stdout
    )
    variables = env["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "CJOB_RECONCILE_INTERVAL", "value": "7"} in variables
    helm("uninstall", "cjob", "-n", "helm-test")
    left = kube.kubectl("-n", "helm-test", "get", "deploy,sa,role,secret", "-o", "name")
    assert left.stdout.split() == ["serviceaccount/default"]
    roles = kube.kubectl("get", "clusterroles", "-o", "name").stdout.split()
    assert not [r for r in roles if "checkpointed-operator" in r]


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: cjob-operator:dev}]}
"""


def test_kubectl_scale_changes_only_the_replicas_through_the_scale_subresource(
    kube: Kube,
) -> None:
    kube.kubectl("create", "namespace", "scaled")
    kube.kubectl("-n", "scaled", "apply", "-f", "-", stdin=DEPLOYMENT)
    kube.kubectl("-n", "scaled", "scale", "deployment/web", "--replicas=0")
    got = json.loads(kube.kubectl("-n", "scaled", "get", "deploy", "web", "-o", "json").stdout)
    assert got["spec"]["replicas"] == 0
    assert got["spec"]["template"]["spec"]["containers"][0]["image"] == "cjob-operator:dev"
    shown = json.loads(
        kube.kubectl(
            "-n", "scaled", "get", "--raw", "/apis/apps/v1/namespaces/scaled/deployments/web/scale"
        ).stdout
    )
    assert (shown["kind"], shown["apiVersion"], shown["spec"]) == (
        "Scale",
        "autoscaling/v1",
        {"replicas": 0},
    )
    refused = kube.kubectl("-n", "scaled", "scale", "deployment/web", "--replicas=-1", check=False)
    assert refused.returncode != 0
