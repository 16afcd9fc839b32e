"""`helm lint --strict` and `helm template` over values combinations; every manifest validated.

Built-in kinds are validated offline against the Kubernetes OpenAPI schemas
(``kubernetes-validate``, strict: unknown fields are errors) for the oldest supported
and the newest known Kubernetes version; the Prometheus Operator kinds against a
minimal structural schema of the fields the chart sets.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import kubernetes_validate
import pytest
from chart_testing import chartkit

OLDEST_K8S = "1.28"
CUSTOM_KINDS = {"ServiceMonitor", "PodMonitor", "PrometheusRule"}
BUILTIN_KINDS = {
    "CustomResourceDefinition",
    "Deployment",
    "Service",
    "ServiceAccount",
    "Secret",
    "ConfigMap",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "NetworkPolicy",
    "PersistentVolumeClaim",
}

_labels = {"type": "object", "additionalProperties": {"type": "string"}}
_meta = {
    "type": "object",
    "required": ["name", "namespace"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "namespace": {"type": "string", "minLength": 1},
        "labels": _labels,
    },
}
_selector = {
    "type": "object",
    "required": ["matchLabels"],
    "additionalProperties": False,
    "properties": {"matchLabels": {**_labels, "minProperties": 1}},
}
_ns_selector = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "matchNames": {"type": "array", "minItems": 1, "items": {"type": "string"}},
        "any": {"type": "boolean"},
    },
}
_duration = {"type": "string", "pattern": "^([0-9]+(ms|s|m|h|d|w|y))+$"}
_endpoint = {
    "type": "object",
    "required": ["port", "path", "honorLabels"],
    "additionalProperties": False,
    "properties": {
        "port": {"type": "string"},
        "path": {"type": "string", "pattern": "^/"},
        "interval": _duration,
        "scrapeTimeout": _duration,
        "honorLabels": {"const": True},
        "relabelings": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "action": {"type": "string"},
                    "targetLabel": {"type": "string"},
                    "replacement": {"type": "string"},
                    "sourceLabels": {"type": "array"},
                    "regex": {"type": "string"},
                },
            },
        },
        "bearerTokenSecret": {"type": "object", "required": ["name", "key"]},
    },
}
_rule = {
    "type": "object",
    "required": ["expr"],
    "additionalProperties": False,
    "oneOf": [{"required": ["alert"]}, {"required": ["record"]}],
    "properties": {
        "alert": {"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9_]*$"},
        "record": {"type": "string", "pattern": "^[a-zA-Z_:][a-zA-Z0-9_:]*$"},
        "expr": {"type": "string", "minLength": 1},
        "for": _duration,
        "labels": _labels,
        "annotations": _labels,
    },
}
CUSTOM_SCHEMAS: dict[str, dict[str, Any]] = {
    "ServiceMonitor": {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": "monitoring.coreos.com/v1"},
            "metadata": _meta,
            "spec": {
                "type": "object",
                "required": ["selector", "endpoints"],
                "additionalProperties": False,
                "properties": {
                    "selector": _selector,
                    "namespaceSelector": _ns_selector,
                    "endpoints": {"type": "array", "minItems": 1, "items": _endpoint},
                },
            },
        },
    },
    "PodMonitor": {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": "monitoring.coreos.com/v1"},
            "metadata": _meta,
            "spec": {
                "type": "object",
                "required": ["selector", "podMetricsEndpoints"],
                "additionalProperties": False,
                "properties": {
                    "selector": _selector,
                    "namespaceSelector": _ns_selector,
                    "podMetricsEndpoints": {"type": "array", "minItems": 1, "items": _endpoint},
                },
            },
        },
    },
    "PrometheusRule": {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": "monitoring.coreos.com/v1"},
            "metadata": _meta,
            "spec": {
                "type": "object",
                "required": ["groups"],
                "additionalProperties": False,
                "properties": {
                    "groups": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "required": ["name", "rules"],
                            "additionalProperties": False,
                            "properties": {
                                "name": {"type": "string"},
                                "interval": _duration,
                                "rules": {"type": "array", "minItems": 1, "items": _rule},
                            },
                        },
                    }
                },
            },
        },
    },
}


def validate(manifest: dict[str, Any]) -> None:
    kind = manifest["kind"]
    name = manifest["metadata"]["name"]
    if kind in CUSTOM_KINDS:
        try:
            jsonschema.validate(manifest, CUSTOM_SCHEMAS[kind])
        except jsonschema.ValidationError as error:
            where = ".".join(str(p) for p in error.absolute_path) or "<root>"
            raise AssertionError(f"{kind} {name}: {where}: {error.message}") from None
        return
    assert kind in BUILTIN_KINDS, f"{kind} {name}: a kind the tests do not know"
    for version in (OLDEST_K8S, kubernetes_validate.latest_version()):
        try:
            kubernetes_validate.validate(manifest, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            where = ".".join(str(p) for p in error.path) or "<root>"
            raise AssertionError(
                f"{kind} {name} (Kubernetes {version}): {where}: {error.message}"
            ) from None


@pytest.mark.parametrize("combo", sorted(chartkit.COMBOS))
def test_helm_lint_strict(helm_bin: str, combo: str) -> None:
    args = ["lint", "--strict", str(chartkit.CHART), "--namespace", chartkit.NAMESPACE]
    for item in chartkit.COMBOS[combo]:
        args += ["--set", item]
    done = chartkit.helm(*args)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("combo", sorted(chartkit.COMBOS))
def test_every_rendered_manifest_validates(helm_bin: str, combo: str) -> None:
    manifests = chartkit.render(chartkit.COMBOS[combo], include_crds=True)
    assert manifests
    for manifest in manifests:
        validate(manifest)
    keys = [(m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"]) for m in manifests]
    assert len(keys) == len(set(keys)), f"duplicate objects: {sorted(keys)}"


def test_the_validation_catches_a_misspelt_field(helm_bin: str) -> None:
    deployment = chartkit.one(chartkit.render(), "Deployment")
    broken = {**deployment, "spec": {**deployment["spec"], "replica": 1}}
    with pytest.raises(AssertionError, match="replica"):
        validate(broken)
    monitor = chartkit.one(chartkit.render(chartkit.MONITORING), "ServiceMonitor")
    endpoint = {**monitor["spec"]["endpoints"][0], "honorLabels": False}
    with pytest.raises(AssertionError, match=r"honorLabels|True"):
        validate({**monitor, "spec": {**monitor["spec"], "endpoints": [endpoint]}})


@pytest.mark.parametrize(
    ("combo", "kinds"),
    [
        (
            "defaults",
            {
                "Deployment",
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding",
                "Role",
                "RoleBinding",
                "Service",
            },
        ),
        ("monitoring", {"ServiceMonitor", "PodMonitor", "PrometheusRule", "ConfigMap"}),
        ("network-policy", {"NetworkPolicy"}),
        ("namespaced", {"Role", "RoleBinding"}),
        ("minio", {"Secret", "Deployment", "Service"}),
    ],
)
def test_each_combination_renders_what_it_turns_on(
    helm_bin: str, combo: str, kinds: set[str]
) -> None:
    rendered = {m["kind"] for m in chartkit.render(chartkit.COMBOS[combo])}
    assert kinds <= rendered, f"missing {kinds - rendered}"


def test_defaults_render_no_optional_objects(helm_bin: str) -> None:
    rendered = {m["kind"] for m in chartkit.render()}
    assert not rendered & {
        "ServiceMonitor",
        "PodMonitor",
        "PrometheusRule",
        "ConfigMap",
        "NetworkPolicy",
        "Secret",
        "PersistentVolumeClaim",
    }


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (["operator.logLevel=loud"], "logLevel"),
        (["prometheusRule.thresholds.bogus=1"], "bogus"),
        (["watchNamespaces={Not_A_Namespace}"], "watchNamespaces"),
        (["minio.rootPassword=short"], "rootPassword"),
        (["unknownTopLevel=1"], "unknownTopLevel"),
        (
            ["metrics.service.enabled=false", "metrics.serviceMonitor.enabled=true"],
            "metrics.service.enabled",
        ),
    ],
)
def test_invalid_values_are_refused_with_a_message(
    helm_bin: str, sets: list[str], message: str
) -> None:
    assert message in chartkit.render_error(sets)
