"""Deployments, enough for a Helm chart's operator: ``spec.replicas`` pods of the template.

Simplified against a real cluster: the Deployment owns its pods directly (no
ReplicaSet between them), and a template change replaces every pod at once
(``Recreate``). Pods are named ``<deployment>-<template hash>-<5 random>`` and carry
the ``pod-template-hash`` label; a deleted pod is replaced; the status reports
replicas, updated, ready and available counts with ``Available`` and ``Progressing``.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import secrets
from typing import Any

from kube_local import resources, store
from kube_local.node import status as status_mod

Obj = dict[str, Any]
HASH_LABEL = "pod-template-hash"


def template_hash(deployment: Obj) -> str:
    template = (deployment.get("spec") or {}).get("template") or {}
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]


class DeploymentController:
    def __init__(self, data: store.Store) -> None:
        self.data = data
        self.deployments = data.type_of("apps", "deployments")
        self.pods = data.type_of("", "pods")
        self._pending: set[tuple[str, str]] = set()

    def attach(self) -> None:
        self.data.listeners.append(self.on_event)
        for d in self.data.select(self.deployments, None):
            self._soon(d["metadata"]["namespace"], d["metadata"]["name"])

    def on_event(self, data: store.Store, t: resources.ResourceType, event: store.Event) -> None:
        obj = event.object
        if t is self.deployments:
            self._soon(obj["metadata"]["namespace"], obj["metadata"]["name"])
        elif t is self.pods:
            for ref in obj["metadata"].get("ownerReferences") or ():
                if ref.get("kind") == "Deployment":
                    self._soon(obj["metadata"]["namespace"], ref["name"])

    def _soon(self, namespace: str, name: str) -> None:
        if (namespace, name) in self._pending:
            return
        self._pending.add((namespace, name))

        def run() -> None:
            self._pending.discard((namespace, name))
            self.reconcile(namespace, name)

        asyncio.get_running_loop().call_soon(run)

    def reconcile(self, namespace: str, name: str) -> None:
        deployment = self.data.find(self.deployments, namespace, name)
        if deployment is None or deployment["metadata"].get("deletionTimestamp"):
            return
        uid = deployment["metadata"]["uid"]
        wanted_hash = template_hash(deployment)
        owned = [
            p
            for p in self.data.select(self.pods, namespace)
            if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or ())
        ]
        live = [p for p in owned if not p["metadata"].get("deletionTimestamp")]
        for pod in live:
            if (pod["metadata"].get("labels") or {}).get(HASH_LABEL) != wanted_hash:
                self.data.remove(self.pods, namespace, pod["metadata"]["name"])
        current = [
            p
            for p in live
            if (p["metadata"].get("labels") or {}).get(HASH_LABEL) == wanted_hash
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]
        replicas = int((deployment.get("spec") or {}).get("replicas", 1))
        for pod in current[replicas:]:
            self.data.remove(self.pods, namespace, pod["metadata"]["name"])
        for _ in range(replicas - len(current)):
            self.data.create(self.pods, namespace, self._pod(deployment, wanted_hash))
        self._status(deployment, current[:replicas], replicas)

    def _pod(self, deployment: Obj, wanted_hash: str) -> Obj:
        template = copy.deepcopy((deployment.get("spec") or {}).get("template") or {})
        meta = template.setdefault("metadata", {})
        meta["labels"] = {**(meta.get("labels") or {}), HASH_LABEL: wanted_hash}
        meta["name"] = f"{deployment['metadata']['name']}-{wanted_hash}-{secrets.token_hex(3)[:5]}"
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": deployment["metadata"]["name"],
                "uid": deployment["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": template.get("spec") or {},
        }

    def _status(self, deployment: Obj, pods: list[Obj], replicas: int) -> None:
        def ready(pod: Obj) -> bool:
            return any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (pod.get("status") or {}).get("conditions") or ()
            )

        n_ready = sum(1 for p in pods if ready(p))
        available = n_ready >= replicas
        stamp = status_mod.now()
        new = {
            "observedGeneration": deployment["metadata"].get("generation", 1),
            "replicas": len(pods),
            "updatedReplicas": len(pods),
            "readyReplicas": n_ready,
            "availableReplicas": n_ready,
            "unavailableReplicas": max(0, replicas - n_ready),
            "conditions": [
                {
                    "type": "Available",
                    "status": "True" if available else "False",
                    "reason": "MinimumReplicasAvailable"
                    if available
                    else "MinimumReplicasUnavailable",
                    "lastUpdateTime": stamp,
                    "lastTransitionTime": stamp,
                },
                {
                    "type": "Progressing",
                    "status": "True",
                    "reason": "NewReplicaSetAvailable",
                    "lastUpdateTime": stamp,
                    "lastTransitionTime": stamp,
                },
            ],
        }
        old = deployment.get("status") or {}
        if {k: v for k, v in old.items() if k != "conditions"} == {
            k: v for k, v in new.items() if k != "conditions"
        } and [c["status"] for c in old.get("conditions") or ()] == [
            c["status"] for c in new["conditions"]
        ]:
            return
        deployment["status"] = new
        self.data.replace(self.deployments, deployment)
