"""The operator Deployment, its Service and monitors, job NetworkPolicies and MinIO,
cross-checked against what the operator code reads and builds."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from chart_testing import chartkit

from cjob_operator import manifests

OPERATOR_SRC = chartkit.ROOT / "operator" / "src" / "cjob_operator"
EVERYTHING = chartkit.COMBOS["everything"]


def operator_container(rendered: list[dict[str, Any]]) -> dict[str, Any]:
    deployment = chartkit.one(rendered, "Deployment", f"{chartkit.RELEASE}-checkpointed-operator")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


def env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_operator_deployment_runs_one_kopf_operator(helm_bin: str) -> None:
    rendered = chartkit.render()
    deployment = chartkit.one(rendered, "Deployment")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    container = operator_container(rendered)
    assert container["command"] == ["kopf"]
    assert container["args"][:3] == ["run", "--module=cjob_operator.main", "--standalone"]
    assert "--all-namespaces" in container["args"]
    assert not any(a.startswith("--namespace") for a in container["args"])


def test_namespaced_mode_watches_exactly_the_listed_namespaces(helm_bin: str) -> None:
    container = operator_container(chartkit.render(chartkit.COMBOS["namespaced"]))
    assert "--all-namespaces" not in container["args"]
    assert [a for a in container["args"] if a.startswith("--namespace")] == [
        "--namespace=team-a",
        "--namespace=team-b",
    ]


def test_operator_env_is_what_the_operator_reads(helm_bin: str) -> None:
    source = "\n".join(
        p.read_text() for p in OPERATOR_SRC.rglob("*.py") if "testing" not in p.parts
    )
    read = set(re.findall(r"os\.environ\.get\(\s*\"(CJOB_[A-Z_]+)\"", source))
    ours = {name for name in env(operator_container(chartkit.render())) if name.startswith("CJOB_")}
    assert ours <= read, f"the chart sets variables the operator never reads: {ours - read}"
    assert {"CJOB_METRICS_PORT", "CJOB_METRICS_HOST", "CJOB_RECONCILE_INTERVAL"} <= ours


def test_metrics_port_follows_the_value_everywhere(helm_bin: str) -> None:
    rendered = chartkit.render(["operator.metricsPort=9102", *chartkit.MONITORING])
    container = operator_container(rendered)
    assert env(container)["CJOB_METRICS_PORT"] == "9102"
    assert container["ports"] == [{"name": "metrics", "containerPort": 9102, "protocol": "TCP"}]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    service = chartkit.one(rendered, "Service")
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"


def test_service_and_service_monitor_select_the_operator(helm_bin: str) -> None:
    rendered = chartkit.render(chartkit.MONITORING)
    pod_labels = chartkit.one(rendered, "Deployment")["spec"]["template"]["metadata"]["labels"]
    service = chartkit.one(rendered, "Service")
    assert service["spec"]["selector"].items() <= pod_labels.items()
    monitor = chartkit.one(rendered, "ServiceMonitor")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["honorLabels"] is True
    # OperatorDown matches up{job="cjob-operator"}
    assert {"action": "replace", "targetLabel": "job", "replacement": "cjob-operator"} in endpoint[
        "relabelings"
    ]


def test_pod_monitor_selects_the_driver_pods_the_operator_creates(helm_bin: str) -> None:
    monitor = chartkit.one(chartkit.render(chartkit.MONITORING), "PodMonitor")
    job = manifests.JobRef(chartkit.NAMESPACE, "orders", "uid-1")
    driver = manifests.labels(job, "driver")
    executor = manifests.labels(job, "executor")
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= driver.items()
    assert not selector.items() <= executor.items()
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    port = {p["name"]: p["containerPort"] for p in _driver_pod()["spec"]["containers"][0]["ports"]}
    assert port[endpoint["port"]] == manifests.CONTROL_PORT
    assert endpoint["honorLabels"] is True
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [chartkit.NAMESPACE]}


def _driver_pod() -> dict[str, Any]:
    from cjob_operator.model import spec as spec_model

    example = yaml.safe_load(
        (chartkit.ROOT / "examples" / "manifests" / "minimal.yaml").read_text()
    )
    spec = spec_model.JobSpec.from_storage(example["spec"])
    return manifests.driver_pod(manifests.JobRef("team-a", "orders", "uid-1"), spec, "d1", None)


@pytest.mark.parametrize("combo", sorted(chartkit.COMBOS))
def test_every_pod_runs_restricted(helm_bin: str, combo: str) -> None:
    for name, pod in chartkit.pod_specs(chartkit.render(chartkit.COMBOS[combo])):
        security = pod["securityContext"]
        assert security["runAsNonRoot"] is True, name
        assert security["seccompProfile"] == {"type": "RuntimeDefault"}, name
        for container in pod["containers"]:
            ctx = container["securityContext"]
            assert ctx["allowPrivilegeEscalation"] is False, name
            assert ctx["readOnlyRootFilesystem"] is True, name
            assert ctx["capabilities"] == {"drop": ["ALL"]}, name
            assert ctx["runAsNonRoot"] is True, name
            assert container["resources"]["requests"] and container["resources"]["limits"], name
            mounts = {m["mountPath"] for m in container["volumeMounts"]}
            assert "/tmp" in mounts, f"{name}: no writable /tmp under a read-only root"


def test_job_network_policy_admits_job_pods_and_the_operator(helm_bin: str) -> None:
    rendered = chartkit.render(EVERYTHING)
    policies = {
        (p["metadata"]["namespace"], p["metadata"]["name"]): p
        for p in chartkit.of_kind(rendered, "NetworkPolicy")
    }
    job = manifests.JobRef("team-a", "orders", "uid-1")
    for namespace in ("team-a", "team-b"):
        policy = policies[(namespace, f"{chartkit.RELEASE}-checkpointed-operator-jobs")]
        selector = policy["spec"]["podSelector"]["matchLabels"]
        for role in ("driver", "executor"):
            assert selector.items() <= manifests.labels(job, role).items()
        same_job, from_operator, scrape = policy["spec"]["ingress"]
        assert same_job == {"from": [{"podSelector": {"matchLabels": selector}}]}
        assert from_operator["ports"] == [{"port": manifests.CONTROL_PORT, "protocol": "TCP"}]
        operator_pods = chartkit.one(
            rendered, "Deployment", f"{chartkit.RELEASE}-checkpointed-operator"
        )
        peer = from_operator["from"][0]
        assert peer["podSelector"]["matchLabels"].items() <= (
            operator_pods["spec"]["template"]["metadata"]["labels"].items()
        )
        assert peer["namespaceSelector"]["matchLabels"] == {
            "kubernetes.io/metadata.name": chartkit.NAMESPACE
        }
        assert scrape["from"] == [{"namespaceSelector": {"matchLabels": {"name": "monitoring"}}}]
    operator_policy = policies[(chartkit.NAMESPACE, f"{chartkit.RELEASE}-checkpointed-operator")]
    assert operator_policy["spec"]["ingress"][0]["ports"] == [
        {"port": "metrics", "protocol": "TCP"}
    ]


def test_driver_service_account_matches_its_role_binding(helm_bin: str) -> None:
    rendered = chartkit.render(chartkit.COMBOS["namespaced"])
    for namespace in ("team-a", "team-b"):
        accounts = [
            m
            for m in chartkit.of_kind(rendered, "ServiceAccount")
            if m["metadata"]["namespace"] == namespace
        ]
        assert [a["metadata"]["name"] for a in accounts] == ["cjob-driver"]


@pytest.mark.parametrize("combo", ["defaults", "namespaced", "driver-pvcs"])
def test_the_operator_defaults_drivers_to_the_account_the_chart_creates(
    helm_bin: str, combo: str
) -> None:
    """Issue 10 finding 1: a job without spec.driver.serviceAccount gets the chart's
    driver account, which exists (with its Role) in every driver namespace."""
    rendered = chartkit.render(chartkit.COMBOS[combo])
    name = env(operator_container(rendered))["CJOB_DRIVER_SERVICE_ACCOUNT"]
    bindings = [
        b for b in chartkit.of_kind(rendered, "RoleBinding") if b["roleRef"]["name"] == name
    ]
    accounts = {
        (a["metadata"]["namespace"], a["metadata"]["name"])
        for a in chartkit.of_kind(rendered, "ServiceAccount")
    }
    assert bindings, "no driver RoleBinding"
    for binding in bindings:
        assert (binding["metadata"]["namespace"], name) in accounts


def test_minio_secret_has_the_keys_jobs_expect_by_default(helm_bin: str) -> None:
    crd = yaml.safe_load(
        (chartkit.ROOT / "crds" / "checkpointedjobs.checkpointed.dev.yaml").read_text()
    )
    storage = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"
    ]["storage"]["properties"]["credentialsSecret"]["properties"]
    expected = {storage["accessKeyKey"]["default"], storage["secretKeyKey"]["default"]}
    rendered = chartkit.render(["minio.enabled=true", "minio.rootPassword=evaluation-only"])
    secret = chartkit.one(rendered, "Secret")
    assert set(secret["stringData"]) == expected
    assert secret["stringData"]["AWS_SECRET_ACCESS_KEY"] == "evaluation-only"
    minio = chartkit.one(rendered, "Deployment", f"{chartkit.RELEASE}-checkpointed-operator-minio")
    refs = {
        e["name"]: e["valueFrom"]["secretKeyRef"]
        for e in minio["spec"]["template"]["spec"]["containers"][0]["env"]
        if "valueFrom" in e
    }
    assert refs["MINIO_ROOT_USER"] == {
        "name": secret["metadata"]["name"],
        "key": "AWS_ACCESS_KEY_ID",
    }
    assert refs["MINIO_ROOT_PASSWORD"] == {
        "name": secret["metadata"]["name"],
        "key": "AWS_SECRET_ACCESS_KEY",
    }


def test_minio_generates_a_password_when_none_is_given(helm_bin: str) -> None:
    secret = chartkit.one(chartkit.render(["minio.enabled=true"]), "Secret")
    assert len(secret["stringData"]["AWS_SECRET_ACCESS_KEY"]) == 32


def test_notes_render_for_every_combination(helm_bin: str) -> None:
    for combo in ("defaults", "namespaced", "everything"):
        args = [
            "install",
            chartkit.RELEASE,
            str(chartkit.CHART),
            "--dry-run=client",
            "--namespace",
            chartkit.NAMESPACE,
        ]
        for item in chartkit.COMBOS[combo]:
            args += ["--set", item]
        done = chartkit.helm(*args)
        assert done.returncode == 0, done.stderr
        notes = done.stdout.split("NOTES:", 1)[1]
        assert "helm show crds" in notes
        assert ("team-a, team-b" in notes) == (combo != "defaults")
