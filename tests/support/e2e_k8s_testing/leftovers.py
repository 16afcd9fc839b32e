"""What of ours is left on a cluster: every listable object type, namespaced and cluster-scoped.

After ``helm uninstall`` the scenario lists every resource type the API server serves
with the ``list`` verb (``kubectl api-resources --verbs=list``) in every namespace and
keeps the objects that are ours: labelled with the release (``app.kubernetes.io/instance``)
or with one of the ``checkpointed.dev/`` labels the operator puts on job pods, annotated
by Helm with the release, owned by a CheckpointedJob, or named after the release or the
job. Not counted, and why:

* Events (``events``, ``events.k8s.io``): records of what happened, which the API server
  expires by itself (one hour by default);
* the CRD: Helm never deletes a chart's CRDs (``helm uninstall`` keeps them, so
  uninstalling a release cannot delete every job of the cluster); docs/operations.md
  says how to remove it;
* the namespaces the test itself created for the install.

>>> pod = {"kind": "Pod", "metadata": {"name": "counts-exec-1", "namespace": "streaming",
...        "labels": {"checkpointed.dev/job": "counts"}}}
>>> why_ours(pod, release="cjob", job="counts")
'label checkpointed.dev/job=counts'
>>> why_ours({"kind": "ConfigMap", "metadata": {"name": "kube-root-ca.crt"}}, "cjob", "counts")
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

NOT_COUNTED = frozenset({"events", "events.events.k8s.io"})
CRD = "checkpointedjobs.checkpointed.dev"


def why_ours(obj: Mapping[str, Any], release: str, job: str) -> str | None:
    """Why ``obj`` is ours (one phrase), or ``None``."""
    meta = obj.get("metadata") or {}
    labels: Mapping[str, str] = meta.get("labels") or {}
    annotations: Mapping[str, str] = meta.get("annotations") or {}
    for key, value in labels.items():
        if key.startswith("checkpointed.dev/"):
            return f"label {key}={value}"
    if labels.get("app.kubernetes.io/instance") == release:
        return f"label app.kubernetes.io/instance={release}"
    if annotations.get("meta.helm.sh/release-name") == release:
        return f"annotation meta.helm.sh/release-name={release}"
    for owner in meta.get("ownerReferences") or []:
        if owner.get("kind") == "CheckpointedJob":
            return f"owned by CheckpointedJob {owner.get('name')}"
    name = str(meta.get("name", ""))
    if name == CRD:
        return None
    for prefix in (release, job):
        if name == prefix or name.startswith(f"{prefix}-") or name.startswith(f"{prefix}."):
            return f"named after {prefix!r}"
    return None


def listable(kubectl: Callable[..., str]) -> list[str]:
    """Every resource type (``name.group``) the API server lists."""
    out = kubectl("api-resources", "--verbs=list", "-o", "name")
    return [line.strip() for line in out.splitlines() if line.strip()]


def left(
    kubectl: Callable[..., str],
    release: str,
    job: str,
    own_namespaces: Iterable[str],
) -> list[str]:
    """``kind namespace/name (why)`` of every object of ours still on the cluster."""
    skip_namespaces = set(own_namespaces)
    found: list[str] = []
    for resource in listable(kubectl):
        if resource in NOT_COUNTED:
            continue
        listed: dict[str, Any] = json.loads(kubectl("get", resource, "-A", "-o", "json"))
        for obj in listed.get("items") or []:
            meta = obj.get("metadata") or {}
            if resource == "namespaces" and meta.get("name") in skip_namespaces:
                continue
            reason = why_ours(obj, release, job)
            if reason is not None:
                where = f"{meta['namespace']}/" if meta.get("namespace") else ""
                found.append(f"{resource} {where}{meta.get('name')} ({reason})")
    return found
