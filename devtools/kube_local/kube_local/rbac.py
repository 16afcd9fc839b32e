"""RBAC authorization against the Roles and bindings stored in the API.

A request is allowed when some binding that names the user (as a User, a Group or a
ServiceAccount) refers to a role with a rule matching the request's API group,
resource (``pods`` or ``pods/status``), verb and, when the rule lists
``resourceNames``, the object's name. RoleBindings apply in their namespace,
ClusterRoleBindings everywhere. Simplifications: no aggregated ClusterRoles
(``aggregationRule`` is ignored), no escalation checks when creating roles, and
non-resource URLs (discovery, /version, /openapi) are open to every authenticated user.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from kube_local import auth, errors, store

RBAC = "rbac.authorization.k8s.io"


@dataclasses.dataclass(frozen=True, slots=True)
class Attributes:
    """What a resource request wants to do."""

    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str

    def forbidden(self, user: auth.User) -> errors.ApiError:
        what = f"{self.resource}.{self.group}" if self.group else self.resource
        subject = f'{what} "{self.name}"' if self.name else what
        full = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        where = f'in the namespace "{self.namespace}"' if self.namespace else "at the cluster scope"
        return errors.ApiError(
            403,
            "Forbidden",
            f'{subject} is forbidden: User "{user.name}" cannot {self.verb} resource '
            f'"{full}" in API group "{self.group}" {where}',
            {"name": self.name, "group": self.group, "kind": self.resource},
        )


def _has(values: Iterable[str], wanted: str) -> bool:
    return any(v in ("*", wanted) for v in values)


def rule_allows(rule: Mapping[str, Any], a: Attributes) -> bool:
    resource = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    resources = rule.get("resources") or []
    if not (
        _has(rule.get("verbs") or [], a.verb)
        and _has(rule.get("apiGroups") or [], a.group)
        and (_has(resources, resource) or (a.subresource and f"*/{a.subresource}" in resources))
    ):
        return False
    names = rule.get("resourceNames") or []
    return not names or a.name in names


def _names_user(
    subjects: Iterable[Mapping[str, Any]], user: auth.User, binding_namespace: str
) -> bool:
    for s in subjects:
        kind = s.get("kind")
        if kind == "User" and s.get("name") == user.name:
            return True
        if kind == "Group" and s.get("name") in user.groups:
            return True
        if kind == "ServiceAccount":
            namespace = s.get("namespace") or binding_namespace
            if user.name == f"{auth.SA_PREFIX}{namespace}:{s.get('name')}":
                return True
    return False


def _rules(data: store.Store, binding: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    ref = binding.get("roleRef") or {}
    namespace = binding.get("metadata", {}).get("namespace", "")
    plural = "roles" if ref.get("kind") == "Role" else "clusterroles"
    role = data.find(data.type_of(RBAC, plural), namespace, ref.get("name", ""))
    return list((role or {}).get("rules") or [])


def authorize(data: store.Store, user: auth.User, a: Attributes) -> None:
    """Return when allowed, raise the API server's 403 otherwise."""
    if user.is_admin:
        return
    bindings = [b for b in data.select(data.type_of(RBAC, "clusterrolebindings"), None)]
    if a.namespace:
        bindings += data.select(data.type_of(RBAC, "rolebindings"), a.namespace)
    for binding in bindings:
        namespace = binding.get("metadata", {}).get("namespace", "")
        if _names_user(binding.get("subjects") or [], user, namespace) and any(
            rule_allows(rule, a) for rule in _rules(data, binding)
        ):
            return
    raise a.forbidden(user)


def review(data: store.Store, user: auth.User, spec: Mapping[str, Any]) -> dict[str, Any]:
    """The status of a SelfSubjectAccessReview (``kubectl auth can-i``)."""
    attrs = spec.get("resourceAttributes")
    if not attrs:
        return {"allowed": True, "reason": "non-resource URLs are open to every user"}
    try:
        authorize(
            data,
            user,
            Attributes(
                attrs.get("verb", ""),
                attrs.get("group", ""),
                attrs.get("resource", ""),
                attrs.get("subresource", ""),
                attrs.get("namespace", ""),
                attrs.get("name", ""),
            ),
        )
    except errors.ApiError:
        return {"allowed": False}
    return {"allowed": True, "reason": "allowed by RBAC"}
