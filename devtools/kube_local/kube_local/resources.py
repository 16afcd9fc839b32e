"""Which resources the server serves, and the discovery documents that describe them.

Built-in types are declared here; a stored CustomResourceDefinition adds its own
(:func:`from_crd`). Objects are stored once per ``(group, plural)``: every served
version of a CRD reads and writes the same objects without conversion (a real server
converts between versions through the storage version or a webhook).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclasses.dataclass(frozen=True, slots=True)
class ResourceType:
    group: str
    versions: tuple[str, ...]
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    printer_columns: tuple[Mapping[str, Any], ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.group, self.plural)

    @property
    def singular(self) -> str:
        return self.kind.lower()

    def api_version(self, version: str | None = None) -> str:
        version = version or self.versions[0]
        return f"{self.group}/{version}" if self.group else version


def _t(
    group: str,
    plural: str,
    kind: str,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    sub: tuple[str, ...] = (),
    version: str = "v1",
) -> ResourceType:
    return ResourceType(group, (version,), plural, kind, namespaced, short, sub)


BUILTIN: tuple[ResourceType, ...] = (
    _t("", "namespaces", "Namespace", False, ("ns",), ("status",)),
    _t("", "nodes", "Node", False, ("no",), ("status",)),
    _t("", "pods", "Pod", short=("po",), sub=("status", "log")),
    _t("", "services", "Service", short=("svc",), sub=("status",)),
    _t("", "endpoints", "Endpoints", short=("ep",)),
    _t("", "configmaps", "ConfigMap", short=("cm",)),
    _t("", "secrets", "Secret"),
    _t("", "events", "Event", short=("ev",)),
    _t("", "serviceaccounts", "ServiceAccount", short=("sa",), sub=("token",)),
    _t("", "persistentvolumeclaims", "PersistentVolumeClaim", short=("pvc",), sub=("status",)),
    _t("apps", "deployments", "Deployment", short=("deploy",), sub=("status", "scale")),
    _t("apps", "statefulsets", "StatefulSet", short=("sts",), sub=("status", "scale")),
    _t("apps", "replicasets", "ReplicaSet", short=("rs",), sub=("status", "scale")),
    _t("batch", "jobs", "Job", sub=("status",)),
    _t("coordination.k8s.io", "leases", "Lease"),
    _t("policy", "poddisruptionbudgets", "PodDisruptionBudget", short=("pdb",), sub=("status",)),
    _t("networking.k8s.io", "networkpolicies", "NetworkPolicy", short=("netpol",)),
    _t("rbac.authorization.k8s.io", "roles", "Role"),
    _t("rbac.authorization.k8s.io", "rolebindings", "RoleBinding"),
    _t("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", False),
    _t("rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", False),
    _t("authorization.k8s.io", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False),
    _t(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        ("crd", "crds"),
        ("status",),
    ),
)


def from_crd(crd: Mapping[str, Any]) -> ResourceType:
    """The resource a CustomResourceDefinition serves."""
    spec = crd.get("spec", {})
    names = spec.get("names", {})
    served = [v for v in spec.get("versions", []) if v.get("served", True)]
    storage = next((v for v in served if v.get("storage")), served[0] if served else {})
    ordered = [storage] + [v for v in served if v is not storage]
    return ResourceType(
        group=spec.get("group", ""),
        versions=tuple(v.get("name", "v1") for v in ordered),
        plural=names.get("plural", ""),
        kind=names.get("kind", ""),
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
        short_names=tuple(names.get("shortNames") or ()),
        subresources=("status",) if "status" in (storage.get("subresources") or {}) else (),
        printer_columns=tuple(storage.get("additionalPrinterColumns") or ()),
    )


def resource_list(group_version: str, types: Iterable[ResourceType]) -> dict[str, Any]:
    """``APIResourceList`` for ``/api/v1`` or ``/apis/<group>/<version>``."""
    entries: list[dict[str, Any]] = []
    for t in types:
        entries.append(
            {
                "name": t.plural,
                "singularName": t.singular,
                "namespaced": t.namespaced,
                "kind": t.kind,
                "verbs": list(VERBS),
                "shortNames": list(t.short_names),
            }
        )
        for sub in t.subresources:
            verbs = ["create"] if sub == "token" else ["get", "patch", "update"]
            entry = {
                "name": f"{t.plural}/{sub}",
                "singularName": "",
                "namespaced": t.namespaced,
                "kind": t.kind,
                "verbs": verbs,
            }
            if sub == "scale":  # clients decode it as autoscaling/v1 Scale
                entry.update(group="autoscaling", version="v1", kind="Scale")
            entries.append(entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": entries,
    }


def group_list(types: Iterable[ResourceType]) -> dict[str, Any]:
    """``APIGroupList`` for ``/apis``."""
    groups: dict[str, list[str]] = {}
    for t in types:
        if t.group:
            known = groups.setdefault(t.group, [])
            known.extend(v for v in t.versions if v not in known)
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [group_doc(g, vs) for g, vs in sorted(groups.items())],
    }


def group_doc(group: str, versions: list[str]) -> dict[str, Any]:
    docs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": docs,
        "preferredVersion": docs[0],
    }


def openapi_root(types: Iterable[ResourceType]) -> dict[str, Any]:
    """``/openapi/v3``: one document per group/version."""
    paths = {}
    for t in types:
        for v in t.versions:
            gv = f"apis/{t.group}/{v}" if t.group else f"api/{v}"
            paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}"}
    return {"paths": paths}


def openapi_group_version(
    group: str, version: str, types: Iterable[ResourceType]
) -> dict[str, Any]:
    """A minimal OpenAPI v3 document: no schemas, only PATCH operations that accept
    ``fieldValidation`` so kubectl leaves validation to the server (which, here,
    checks no schema: a simplification)."""
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    paths: dict[str, Any] = {}
    for t in types:
        scope = "/namespaces/{namespace}" if t.namespaced else ""
        gvk = {"group": t.group, "version": version, "kind": t.kind}
        paths[f"{prefix}{scope}/{t.plural}/{{name}}"] = {
            "patch": {
                "x-kubernetes-group-version-kind": gvk,
                "parameters": [
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}
                ],
                "responses": {},
            }
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "kube-local", "version": version},
        "paths": paths,
        "components": {"schemas": {}},
    }
